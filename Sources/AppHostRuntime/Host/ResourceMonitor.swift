#if canImport(Glibc)
import Glibc
#endif

/// The host-wide resource rules' state (README.md, "Resource rules"; README.md, "How the code is laid out"):
/// the memory budget all apps share, the memory-pressure episode under way (MemoryPressure
/// decides its steps), and the check of what an app holds at suspension (0xdead10cc). The host
/// measures and acts; this keeps what the measurements mean over time. Touched only on the host's
/// loop.
final class ResourceMonitor {
    /// The memory all apps together may use.
    let budget: UInt64
    private let sharedResources: SharedResourceCheck
    private var episode: MemoryPressure<AppID>?

    init(budget: UInt64, sharedResources: SharedResourceCheck) {
        self.budget = budget
        self.sharedResources = sharedResources
    }

    /// What these processes hold of the shared resources (app-group locks, declared resources).
    func held(by processes: [pid_t]) -> [HeldResource] { sharedResources.held(by: processes) }

    /// Whether a sample of `total` bytes over every app begins an episode: over the budget, and
    /// none under way.
    func isOverBudget(_ total: UInt64) -> Bool { episode == nil && total > budget }

    /// Begins an episode (true), or tightens the one under way to `target` (false).
    func beginPressure(target: UInt64, cause: String, now: HostInstant, grace: Duration, sparingRunningApps: Bool) -> Bool {
        guard episode == nil else {
            episode?.tighten(to: target)
            return false
        }
        episode = MemoryPressure(target: target, cause: cause, now: now, grace: grace, sparesRunningApps: sparingRunningApps)
        return true
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
