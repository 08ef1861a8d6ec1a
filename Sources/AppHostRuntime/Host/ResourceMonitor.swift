#if canImport(Glibc)
import Glibc
#endif

/// The host-wide resource rules' state (docs/policy.md, "Resource rules"; docs/internals.md, "How the code is laid out"):
/// the memory budget all apps share, each app's limit, the samples and what they mean (a memory
/// limit passed where no cgroup holds the app, CPU in the background over its share, the budget
/// passed), the memory-pressure episode under way (MemoryPressure decides its steps), and the
/// check of what an app holds at suspension (0xdead10cc). The host measures and acts on the
/// effects; this keeps what the measurements mean over time. Touched only on the host's loop.
final class ResourceMonitor {
    /// The memory all apps together may use.
    let budget: UInt64
    private let policy: Policy
    private let sharedResources: SharedResourceCheck
    private var episode: MemoryPressure<AppID>?
    /// Each app's CPU time in the background, from when it last entered the background.
    private var cpuWindows: [AppID: ResourceRules.CPUWindow] = [:]

    init(budget: UInt64, policy: Policy, sharedResources: SharedResourceCheck) {
        self.budget = budget
        self.policy = policy
        self.sharedResources = sharedResources
    }

    // MARK: Limits

    /// The memory limit of an app in `state` (the background one in the background, suspended,
    /// or launching into the background; the foreground one otherwise), and its label. At its
    /// spawn an app is `.launching`.
    func memoryLimit(state: AppState, inForeground: Bool) -> (bytes: UInt64, label: String) {
        ResourceRules.memoryLimit(state: state, inForeground: inForeground, policy: policy)
    }

    /// What holding an app to the limit of the state it enters takes.
    enum LimitStep: Equatable {
        /// Nothing: a resumed app keeps the background limit it was held to.
        case keep
        /// Its memory group holds it to this limit already (the kernel has kept the app under
        /// it; the states of a launch share one) and it was measured before (its report has
        /// figures if it dies now): measure it again once what its new state started (the next
        /// callback, say) is under way.
        case measureLater
        /// Measure it now, then hold it to this limit: `ResourceRules.limitOnEntering` ends it if
        /// it uses more or its group cannot be brought down to it.
        case apply(bytes: UInt64, label: String)
    }

    /// The step for an app entering a running state (active, inactive, background) from
    /// `previous`, whose memory group (if it has one) holds it to `groupLimit`.
    func limitStep(entering state: AppState, from previous: AppState, inForeground: Bool, groupLimit: UInt64?, measuredBefore: Bool) -> LimitStep {
        guard state != .background || previous != .suspended else { return .keep }
        let limit = memoryLimit(state: state, inForeground: inForeground)
        if groupLimit == limit.bytes, measuredBefore { return .measureLater }
        return .apply(bytes: limit.bytes, label: limit.label)
    }

    // MARK: Sampling

    /// When the next sample is due: one interval from now while some app runs (live, not
    /// suspended); nil when none does (a suspended app neither allocates nor computes).
    func nextSample(anyRunning: Bool, now: HostInstant) -> HostInstant? {
        anyRunning ? now + policy.resourceSampleInterval : nil
    }

    /// The app entered `state`: in the background its CPU window starts at `cpu` (its CPU time
    /// now, if it could be read); in any other state it has none.
    func stateChanged(_ app: AppID, to state: AppState, cpu: Duration?, now: HostInstant) {
        cpuWindows[app] = state == .background ? cpu.map { .init(startingAt: now, total: $0) } : nil
    }

    /// What the host measured of one live app for a sample.
    struct Sample: Equatable {
        var id: AppID
        var state: AppState
        var inForeground: Bool
        /// Its memory now (measured now if it runs; a suspended app's does not change).
        var memory: UInt64
        /// A memory cgroup holds it to its limit (the kernel stops it there, and says so).
        var limitedByGroup: Bool
        /// It is being suspended: its CPU is not held against it.
        var suspending: Bool
        /// Its CPU time now, read while it is in the background.
        var cpu: Duration?
    }

    /// What a sample means.
    enum Effect: Equatable {
        /// End the app: over its memory limit (jetsam per-process-limit), or over its share of
        /// CPU in the background (EXC_RESOURCE).
        case end(AppID, Termination)
        /// The apps together use `usage`, over the budget: memory pressure begins (`cause`),
        /// down to `target`.
        case beginPressure(target: UInt64, usage: UInt64, cause: String)
    }

    /// One sample of every live app: each running one's memory against its limit where no
    /// cgroup holds it, then its CPU in the background against its share of the trailing
    /// window; then every app's memory together against the budget (unless an episode is under
    /// way).
    func sample(_ apps: [Sample], now: HostInstant) -> [Effect] {
        var effects: [Effect] = []
        var total: UInt64 = 0
        for app in apps {
            total += app.memory
            if !app.limitedByGroup, app.state != .suspended,
               let termination = ResourceRules.limitBySampling(
                   memory: app.memory, limit: memoryLimit(state: app.state, inForeground: app.inForeground),
                   interval: policy.resourceSampleInterval) {
                effects.append(.end(app.id, termination))
                continue
            }
            if app.state == .background, !app.suspending, let cpu = app.cpu,
               let termination = cpuWindows[app.id]?.add(cpu, at: now, policy: policy) {
                effects.append(.end(app.id, termination))
            }
        }
        if isOverBudget(total) { effects.append(.beginPressure(target: budget, usage: total, cause: "over the memory budget")) }
        return effects
    }

    // MARK: The sandbox

    /// What the app's refused system call `call` means, the app having made `count` of them
    /// (this one included): its end if the call is dangerous or brings it to the policy's
    /// limit, nil if it is refused (EPERM) and the app goes on (ResourceRules.violationTermination).
    func refusedCall(_ call: String, dangerous: Bool, state: AppState, count: Int) -> Termination? {
        ResourceRules.violationTermination(call: call, dangerous: dangerous, state: state, count: count, limit: policy.maximumViolations)
    }

    // MARK: Shared resources and pressure

    /// The end of an app whose `processes` hold a shared resource (an app-group lock, a declared
    /// resource) now that it would be suspended (0xdead10cc), with what they hold; nil if they
    /// hold nothing.
    func heldAtSuspension(by processes: [pid_t]) -> (held: [HeldResource], end: Termination)? {
        let held = sharedResources.held(by: processes)
        return ResourceRules.sharedResourceTermination(held: held).map { (held, $0) }
    }

    /// Whether a sample of `total` bytes over every app begins an episode: over the budget, and
    /// none under way.
    private func isOverBudget(_ total: UInt64) -> Bool { episode == nil && total > budget }

    /// What the host is told of a live app when memory pressure begins.
    struct LiveApp: Equatable {
        var id: AppID
        var state: AppState
        /// Its process is still starting: it cannot hear a warning yet.
        var starting: Bool
    }

    /// Begins an episode down to `target` (apps are ended once the policy's grace is over), and
    /// returns the apps among `apps` to warn now: those running (not suspended) whose process
    /// has started. With an episode under way, only tightens it to `target`, and returns nil.
    func beginPressure(target: UInt64, cause: String, now: HostInstant, sparingRunningApps: Bool, apps: [LiveApp]) -> [AppID]? {
        guard episode == nil else {
            episode?.tighten(to: target)
            return nil
        }
        episode = MemoryPressure(target: target, cause: cause, now: now, grace: policy.memoryWarningGrace, sparesRunningApps: sparingRunningApps)
        return apps.filter { $0.state != .suspended && !$0.starting }.map(\.id)
    }

    /// The episode's next step, given the apps' memory now; an episode that is over ends.
    func stepPressure(now: HostInstant, usage: UInt64, candidates: [ResourceRules.Candidate<AppID>]) -> MemoryPressure<AppID>.Step? {
        guard var current = episode else { return nil }
        let step = current.step(now: now, usage: usage, candidates: candidates)
        episode = current
        if case .over = step { episode = nil }
        return step
    }

    /// The app the episode ended is gone; true if the episode was waiting for it (it steps now).
    func pressureVictimEnded(_ app: AppID) -> Bool {
        guard episode?.awaiting == app else { return false }
        episode?.victimEnded(app)
        return true
    }

    /// When the episode's grace ends, if one is under way.
    var pressureDeadline: HostInstant? { episode?.deadline }
}
