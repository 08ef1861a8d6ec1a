/// A memory-pressure episode (jetsam vm-pageshortage), as a pure state machine: the apps must
/// come down to `target` bytes. Running apps are warned first; if usage is still over when the
/// grace ends, apps are ended one at a time (`ResourceRules.nextVictim`), each measured again
/// after the last one's process is gone.
struct MemoryPressure<ID: Equatable> {
    var target: UInt64
    /// "over the memory budget", "memory-pressure": what started it.
    let cause: String
    /// When the warned apps' grace ends; nil once apps are being ended.
    private(set) var graceEnds: HostInstant?
    /// The apps ended so far, by name, in order.
    private(set) var ended: [String] = []
    /// The app last ended, until its process is gone.
    private(set) var awaiting: ID?

    /// What to do at a step of the episode.
    enum Step: Equatable {
        /// Wait: for the grace to end, or for the last victim's process to go.
        case wait
        /// End this app without a callback.
        case end(ID, Termination)
        /// Over: usage fits the target (or no app is left to end); a line saying how.
        case over(String)
    }

    /// Only suspended apps may be ended (`memory-pressure` without a target): a running app is
    /// spared even if it grew by a page since the target was taken from it.
    private(set) var sparesRunningApps: Bool

    init(target: UInt64, cause: String, now: HostInstant, grace: Duration, sparesRunningApps: Bool = false) {
        self.target = target
        self.cause = cause
        self.sparesRunningApps = sparesRunningApps
        graceEnds = now + grace
    }

    /// When the host must call `step` next, if it is waiting for time.
    var deadline: HostInstant? { graceEnds }

    /// A second cause while one episode runs only lowers the target.
    mutating func tighten(to target: UInt64) {
        self.target = min(self.target, target)
        sparesRunningApps = false
    }

    /// The victim's process is gone: the next step measures again.
    mutating func victimEnded(_ id: ID) {
        if awaiting == id { awaiting = nil }
    }

    /// The next step, given the apps' usage now and the apps that may be ended.
    mutating func step(now: HostInstant, usage: UInt64, candidates: [ResourceRules.Candidate<ID>]) -> Step {
        if let graceEnds, now < graceEnds { return .wait }
        graceEnds = nil
        guard awaiting == nil else { return .wait }
        let candidates = sparesRunningApps ? candidates.filter { $0.state == .suspended } : candidates
        guard usage > target, let (victim, position) = ResourceRules.nextVictim(among: candidates) else {
            let outcome = ended.isEmpty ? "relieved" : "ended \(ended.joined(separator: ", "))"
            return .over("\(outcome); the apps use \(usage.mebibytes)"
                + (usage > target ? ", still over \(target.mebibytes): no app is left to end" : ", within \(target.mebibytes)"))
        }
        awaiting = victim.id
        ended.append(victim.name)
        return .end(victim.id, ResourceRules.pageShortage(cause: cause, usage: usage, target: target, memory: victim.memory, position: position))
    }
}

/// What the host says when a memory-pressure episode begins: its cause, the apps' usage against
/// the budget, the apps warned, and how long they have to come down to the target. The scenes
/// disconnected first are known only once the host has disconnected them, hence `line(disconnected:)`.
struct PressureNotice: Equatable {
    var cause: String
    var usage: UInt64
    var budget: UInt64
    /// The names of the apps warned, in order.
    var warned: [String]
    var grace: Duration
    var target: UInt64

    /// The event's text, with the background scenes disconnected ("APP (SESSION, …)" per app).
    func line(disconnected: [String]) -> String {
        let warning = warned.isEmpty ? "no app is running to warn" : "memory warning to \(warned.joined(separator: ", "))"
        return "\(cause): the apps use \(usage.mebibytes) (budget \(budget.mebibytes)); \(warning); "
            + (disconnected.isEmpty ? "" : "background scenes disconnected: \(disconnected.joined(separator: ", ")); ")
            + "apps are ended in \(grace.formatted) unless usage falls to \(target.mebibytes)"
    }
}
