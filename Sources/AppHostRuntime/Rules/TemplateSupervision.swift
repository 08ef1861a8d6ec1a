/// When the launch template is started again and when standbys are made (docs/launching.md, "How apps
/// are launched"): a pure rule over the template's recent ends and the standbys that failed in a
/// row. The host follows what it says.
struct TemplateSupervision {
    /// At most this many ends of the template in `restartWindow`; past it, apps launch by exec
    /// until the host is restarted.
    static let restartLimit = 3
    static let restartWindow: Duration = .seconds(60)
    /// Standbys that failed in a row before none are made (until the template starts again).
    static let standbyFailureLimit = 3

    private var ends: [HostInstant] = []
    private var standbyFailures = 0

    /// The template ended at `now`: whether it is started again, and how many times it ended in
    /// the window (this end included).
    mutating func templateEnded(at now: HostInstant) -> (restart: Bool, endsInWindow: Int) {
        ends = ends.filter { $0.duration(to: now) < Self.restartWindow } + [now]
        return (ends.count <= Self.restartLimit, ends.count)
    }

    /// The template (re)started: standbys are made again.
    mutating func templateStarted() { standbyFailures = 0 }

    /// Whether a standby may be made now.
    var makesStandbys: Bool { standbyFailures < Self.standbyFailureLimit }

    /// A standby was made whole (true), or could not be, or was unusable (false).
    mutating func standbyMade(_ whole: Bool) {
        standbyFailures = whole ? 0 : standbyFailures + 1
    }
}
