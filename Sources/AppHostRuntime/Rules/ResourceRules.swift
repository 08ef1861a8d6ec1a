import Foundation

/// The resource rules (docs/policy.md, "Resource rules") as pure functions: measurements in, a termination (or a
/// victim) out. The host measures (memory, CPU, what an app holds) and acts; what the
/// measurements mean is decided here, so each rule is unit tested without a process.
enum ResourceRules {
    // MARK: The sandbox's violation limit

    /// What a refused system call means for the app: its end if the call is dangerous (SIGSYS),
    /// or if it brings the app's refused calls to the policy's limit (`count` includes it; the
    /// call is then left unanswered); nil: it is refused (EPERM) and the app goes on.
    static func violationTermination(call: String, dangerous: Bool, state: AppState, count: Int, limit: Int?) -> Termination? {
        if dangerous {
            return Termination(
                kind: .forbiddenSyscall, namespace: .sandbox, code: UInt64(SIGSYS),
                reason: "made the forbidden system call \(call) while \(state.rawValue); killed by SIGSYS")
        }
        guard let limit, count >= limit else { return nil }
        return Termination(
            kind: .sandboxViolations, namespace: .sandbox, code: nil,
            reason: "made \(count) refused system calls (the policy allows \(limit)); the last: \(call)")
    }

    // MARK: Shared resources (0xdead10cc)

    /// The end of an app that holds something shared when it would be suspended: a lock in an
    /// app-group container, or a declared shared resource open. Nil if it holds nothing.
    static func sharedResourceTermination(held: [HeldResource]) -> Termination? {
        guard let first = held.first else { return nil }
        let more = held.count > 1 ? " (and \(held.count - 1) more, listed in the report)" : ""
        return Termination(
            kind: .sharedResource, namespace: .runningBoard, code: TerminationCode.sharedResourceHeld.rawValue,
            reason: "held \(first) when it would have been suspended\(more)")
    }

    // MARK: Memory limits (jetsam per-process-limit)

    /// Which of the policy's limits holds an app: the background one in the background,
    /// suspended, or launching into the background; the foreground one otherwise.
    static func memoryLimit(state: AppState, inForeground: Bool, policy: Policy) -> (bytes: UInt64, label: String) {
        let background = state == .background || state == .suspended || (state == .launching && !inForeground)
        return background ? (policy.backgroundMemoryLimit, "background") : (policy.foregroundMemoryLimit, "foreground")
    }

    /// An app entering a state whose limit it already exceeds (or whose memory cgroup cannot be
    /// brought down to it) is ended then.
    static func limitOnEntering(_ label: String, limit: UInt64, memory: UInt64, peak: UInt64, fits: Bool) -> Termination? {
        fits ? nil : overOnEntering(label, limit: limit, memory: memory, peak: peak)
    }

    /// The end of an app that does not fit the limit of the state it enters: it uses more, or
    /// its memory cgroup cannot be brought down to it.
    static func overOnEntering(_ label: String, limit: UInt64, memory: UInt64, peak: UInt64) -> Termination {
        jetsam("used \(memory.mebibytes) on entering the \(label), over its \(label) memory limit of \(limit.mebibytes) (peak \(peak.mebibytes))")
    }

    /// A sample over the limit (where no memory cgroup holds the app).
    static func limitBySampling(memory: UInt64, limit: (bytes: UInt64, label: String), interval: Duration) -> Termination? {
        guard memory > limit.bytes else { return nil }
        return jetsam("used \(memory.mebibytes), over its \(limit.label) memory limit of \(limit.bytes.mebibytes) (measured every \(interval.formatted))")
    }

    /// The memory cgroup stopped the app at its limit.
    static func limitByCgroup(limit: (bytes: UInt64, label: String), memory: UInt64, peak: UInt64) -> Termination {
        jetsam("reached its \(limit.label) memory limit of \(limit.bytes.mebibytes) (memory cgroup; \(memory.mebibytes) resident, peak \(peak.mebibytes))")
    }

    private static func jetsam(_ reason: String) -> Termination {
        Termination(kind: .perProcessLimit, namespace: .jetsam, code: nil, reason: reason)
    }

    // MARK: Memory pressure (jetsam vm-pageshortage)

    /// An app that memory pressure may end.
    struct Candidate<ID: Equatable>: Equatable {
        var id: ID
        var name: String
        var state: AppState
        var inForeground: Bool
        /// When it last ran (suspended apps) or entered its state (the others).
        var since: HostInstant
        var memory: UInt64
    }

    /// The order jetsam ends apps in: suspended ones first, the one suspended longest first;
    /// then those running in the background; the foreground app last.
    static func nextVictim<ID>(among candidates: [Candidate<ID>]) -> (victim: Candidate<ID>, position: String)? {
        func rank(_ candidate: Candidate<ID>) -> Int {
            switch candidate.state {
            case .suspended: 0
            case .background: 1
            default: candidate.inForeground ? 2 : 1
            }
        }
        guard let victim = candidates.min(by: { (rank($0), $0.since) < (rank($1), $1.since) }) else { return nil }
        let position = ["suspended, least recently used first", "running in the background", "in the foreground, the last considered"][rank(victim)]
        return (victim, position)
    }

    static func pageShortage(cause: String, usage: UInt64, target: UInt64, memory: UInt64, position: String) -> Termination {
        Termination(
            kind: .pageShortage, namespace: .jetsam, code: nil,
            reason: "ended without a callback to free memory (\(cause)): the apps used \(usage.mebibytes), "
                + "over \(target.mebibytes); it used \(memory.mebibytes) (\(position))")
    }

    // MARK: CPU in the background (EXC_RESOURCE)

    /// The trailing window of an app's CPU time in the background.
    struct CPUWindow: Equatable {
        private(set) var samples: [(at: HostInstant, total: Duration)] = []

        static func == (lhs: CPUWindow, rhs: CPUWindow) -> Bool {
            lhs.samples.map(\.at) == rhs.samples.map(\.at) && lhs.samples.map(\.total) == rhs.samples.map(\.total)
        }

        init() {}

        /// A window starting now, at `total` CPU time.
        init(startingAt now: HostInstant, total: Duration) { samples = [(now, total)] }

        /// Adds a sample; the end of the app if it used more than the policy's share of a core
        /// within the window (measured from the newest sample at or before its start).
        mutating func add(_ total: Duration, at now: HostInstant, policy: Policy) -> Termination? {
            samples.append((now, total))
            let windowStart = now - policy.backgroundCPUWindow
            while samples.count > 1 && samples[1].at <= windowStart { samples.removeFirst() }
            let base = samples[0]
            let used = total - base.total
            let allowed = policy.backgroundCPUWindow * (policy.backgroundCPULimit / 100)
            guard used > allowed else { return nil }
            let span = base.at.duration(to: now)
            return Termination(
                kind: .cpuResource, namespace: .resource, code: nil,
                reason: String(
                    format: "used %.2f s of CPU in %.2f s in the background (%.0f %% of a core); the limit is %.0f %% of a core over %@",
                    used.seconds, span.seconds, used.seconds / max(span.seconds, 0.001) * 100, policy.backgroundCPULimit,
                    policy.backgroundCPUWindow.formatted))
        }
    }
}
