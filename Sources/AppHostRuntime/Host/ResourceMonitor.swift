#if canImport(Glibc)
import Glibc
#endif

/// The host-wide resource rules' state (docs/policy.md, "Resource rules"; docs/internals.md, "How the code is laid out"):
/// the memory budget all apps share, each app's limit (on entering a state, and when its memory
/// cgroup runs out), the samples and what they mean (a memory limit passed where no cgroup holds
/// the app, CPU in the background over its share, the budget passed), memory pressure (the
/// episode under way, which MemoryPressure steps; its target, its warnings, the scenes
/// disconnected first, the order apps are ended in), and the check of what an app holds at
/// suspension (0xdead10cc). The host measures and acts on the effects; this keeps what the
/// measurements mean over time. Touched only on the host's loop.
final class ResourceMonitor {
    /// The memory all apps together may use.
    private let budget: UInt64
    private let policy: Policy
    private let sharedResources: SharedResourceCheck
    private var episode: MemoryPressure<AppID>?
    /// Each app's CPU time in the background, from when it last entered the background.
    private var cpuWindows: [AppID: ResourceRules.CPUWindow] = [:]
    /// When each suspended app was suspended (it last ran then): memory pressure ends the one
    /// suspended longest first.
    private var suspendedAt: [AppID: HostInstant] = [:]

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

    /// What holding an app, measured at `memory` on entering a state, to that state's limit
    /// (`LimitStep.apply`) takes.
    enum LimitHold: Equatable {
        /// It fits: bring its memory group, if it has one, down to this limit (`groupRefused`
        /// ends it if the group cannot be).
        case setGroupLimit(UInt64)
        /// It already uses more (jetsam per-process-limit): end it, its group left as it is.
        case end(Termination)
    }

    /// Holds an app that uses `memory` (at most `peak`) to the limit `bytes` of the state it enters.
    func holdToLimit(bytes: UInt64, label: String, memory: UInt64, peak: UInt64) -> LimitHold {
        guard memory <= bytes else { return .end(ResourceRules.overOnEntering(label, limit: bytes, memory: memory, peak: peak)) }
        return .setGroupLimit(bytes)
    }

    /// The end of an app whose memory group could not be brought down to the limit `bytes` of the
    /// state it enters (the kernel would not reclaim enough).
    func groupRefused(bytes: UInt64, label: String, memory: UInt64, peak: UInt64) -> Termination {
        ResourceRules.overOnEntering(label, limit: bytes, memory: memory, peak: peak)
    }

    /// The end of an app whose memory cgroup ran out at `groupLimit` (the kernel stops it
    /// there), named by the limit of the state it is in.
    func groupFull(state: AppState, inForeground: Bool, groupLimit: UInt64, memory: UInt64, peak: UInt64) -> Termination {
        ResourceRules.limitByCgroup(limit: (groupLimit, memoryLimit(state: state, inForeground: inForeground).label), memory: memory, peak: peak)
    }

    // MARK: Sampling

    /// When the next sample is due: one interval from now while some app runs (live, not
    /// suspended); nil when none does (a suspended app neither allocates nor computes).
    func nextSample(anyRunning: Bool, now: HostInstant) -> HostInstant? {
        anyRunning ? now + policy.resourceSampleInterval : nil
    }

    /// The app entered `state`: in the background its CPU window starts at `cpu` (its CPU time
    /// now, if it could be read); in any other state it has none. Suspended, it last ran now.
    func stateChanged(_ app: AppID, to state: AppState, cpu: Duration?, now: HostInstant) {
        cpuWindows[app] = state == .background ? cpu.map { .init(startingAt: now, total: $0) } : nil
        suspendedAt[app] = state == .suspended ? now : nil
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

    // MARK: Shared resources and the budget

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

    // MARK: Memory pressure (jetsam vm-pageshortage)

    /// What the host tells of a live app to the memory-pressure rules.
    struct LiveApp: Equatable {
        var id: AppID
        var name: String
        var state: AppState
        var inForeground: Bool
        /// Its process is still starting: it cannot hear a warning yet.
        var starting: Bool
        /// Its memory at the last measurement.
        var memory: UInt64
        /// When it entered its state.
        var since: HostInstant
    }

    /// What the beginning of an episode takes, in this order.
    enum PressureEffect: Equatable {
        /// Disconnect every scene in the background (as iOS reclaims memory from scenes before
        /// it ends apps), noting which.
        case disconnectBackgroundScenes
        /// Say that pressure began (the scenes disconnected go in its line).
        case announce(PressureNotice)
        /// Send the app `applicationDidReceiveMemoryWarning`.
        case warn(AppID)
    }

    /// Memory running short by command (`memory-pressure [MIB]`), every live app in `apps`
    /// measured now: down to `target`, or without one to what the running apps use (every
    /// suspended app is ended and no running one).
    func pressureCommand(target: UInt64?, now: HostInstant, apps: [LiveApp]) -> [PressureEffect] {
        let running = apps.filter { $0.state != .suspended }.map(\.memory).reduce(0, +)
        return beginPressure(
            target: target ?? running, usage: apps.map(\.memory).reduce(0, +),
            cause: target.map { "memory-pressure \($0.mebibytes)" } ?? "memory-pressure", now: now,
            sparingRunningApps: target == nil, apps: apps)
    }

    /// Begins an episode down to `target`, the apps using `usage` (apps are ended once the
    /// policy's grace is over, `pressureDeadline`): background scenes are disconnected, the
    /// episode announced, and the apps among `apps` that run (not suspended) and whose process
    /// has started are warned. With an episode under way, only tightens it to `target`, and
    /// returns nothing.
    func beginPressure(target: UInt64, usage: UInt64, cause: String, now: HostInstant, sparingRunningApps: Bool = false, apps: [LiveApp]) -> [PressureEffect] {
        guard episode == nil else {
            episode?.tighten(to: target)
            return []
        }
        let grace = policy.memoryWarningGrace
        episode = MemoryPressure(target: target, cause: cause, now: now, grace: grace, sparesRunningApps: sparingRunningApps)
        let warned = apps.filter { $0.state != .suspended && !$0.starting }
        let notice = PressureNotice(cause: cause, usage: usage, budget: budget, warned: warned.map(\.name), grace: grace, target: target)
        return [.disconnectBackgroundScenes, .announce(notice)] + warned.map { .warn($0.id) }
    }

    /// The episode's next step, given every live app measured now; an episode that is over ends.
    func stepPressure(now: HostInstant, apps: [LiveApp]) -> MemoryPressure<AppID>.Step? {
        guard var current = episode else { return nil }
        let step = current.step(now: now, usage: apps.map(\.memory).reduce(0, +), candidates: apps.map(candidate))
        episode = current
        if case .over = step { episode = nil }
        return step
    }

    /// A live app as one pressure may end, keyed for least recently used: a suspended app by
    /// when it was suspended (it last ran), any other, or one whose suspension was not yet
    /// heard, by when it entered its state.
    private func candidate(_ app: LiveApp) -> ResourceRules.Candidate<AppID> {
        let since = app.state == .suspended ? suspendedAt[app.id] ?? app.since : app.since
        return .init(id: app.id, name: app.name, state: app.state, inForeground: app.inForeground, since: since, memory: app.memory)
    }

    /// The app's run ended: when it was suspended goes (its next run is suspended afresh). True
    /// if the episode was waiting for it to go (it steps now).
    func appEnded(_ app: AppID) -> Bool {
        suspendedAt[app] = nil
        guard episode?.awaiting == app else { return false }
        episode?.victimEnded(app)
        return true
    }

    /// When the episode's grace ends, if one is under way.
    var pressureDeadline: HostInstant? { episode?.deadline }
}
