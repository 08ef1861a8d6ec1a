/// An installed app: its place in the host's table (apps are never uninstalled from a running
/// host, so the place is the app's for the host's life).
struct AppID: Hashable, Comparable, Sendable {
    let index: Int
    static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.index < rhs.index }
}

/// One run of an app (a launch, to its end): the key of what the host keeps for that run (its
/// machine's deadline, what is owed to it). Never reused in a host.
struct RunID: Hashable, Sendable, CustomStringConvertible {
    let app: AppID
    /// The app's launches before this one.
    let launch: Int
    var description: String { "app \(app.index) run \(launch)" }
}
