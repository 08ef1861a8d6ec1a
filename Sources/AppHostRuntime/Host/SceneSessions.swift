import AppHostProtocol

// The scene sessions of an app that adopts scenes, as the host keeps them (docs/lifecycle.md, "Scenes").
// The host names each session (its persistent identifier, "1", "2", … per app), knows which
// have a scene connected in the app's current run, which comes forward when the app does (the
// one last in the foreground), and what the app last reported of each (its userInfo and state
// restoration activity). They are kept in the state directory across hosts. The app's SDK
// creates and drives the scenes themselves.

/// An app's scene sessions, oldest first.
struct SceneSessions: Sendable, Equatable, Codable {
    struct Session: Sendable, Equatable, Codable {
        /// The session's persistent identifier.
        var identifier: String
        /// Whether a scene is connected to it in the app's current run.
        var connected = false
        /// What the app last reported of it.
        var restoration: WireSceneSession?
    }

    private(set) var sessions: [Session] = []
    /// Session identifiers, least recently in the foreground first.
    private var recency: [String] = []
    private var nextNumber = 1
    /// Sessions discarded while the app may not know yet: a report of one is not a violation.
    private var discarded: Set<String> = []
    /// Sessions discarded while the app was not running, with what it last reported of them: it
    /// is told at its next launch (`WireSceneSession.discarded`). Optional: absent from a store an
    /// earlier host wrote.
    private var untold: [WireSceneSession]?

    /// The session that comes forward when the app comes to the foreground.
    var front: String? { recency.last }

    func session(_ identifier: String) -> Session? { sessions.first { $0.identifier == identifier } }

    /// A new session, now the front one.
    mutating func add() -> String {
        let identifier = String(nextNumber)
        nextNumber += 1
        sessions.append(Session(identifier: identifier))
        recency.append(identifier)
        return identifier
    }

    /// The front session (a new one if the app has none), marked connected: the app is coming to
    /// the foreground with it.
    mutating func connectFront() -> String {
        let identifier = front ?? add()
        setConnected(identifier, true)
        return identifier
    }

    mutating func markConnected(_ identifier: String) { setConnected(identifier, true) }

    mutating func disconnect(_ identifier: String) { setConnected(identifier, false) }

    /// The app's process ended: no scene is connected any more; the sessions stay.
    mutating func disconnectAll() {
        for index in sessions.indices { sessions[index].connected = false }
        discarded = []
    }

    /// The app's report of its sessions: each must be one the host made.
    mutating func restore(_ reported: [WireSceneSession]) -> String? {
        for report in reported {
            guard let index = sessions.firstIndex(where: { $0.identifier == report.identifier }) else {
                if discarded.contains(report.identifier) { continue }
                return "it reported scene session \(report.identifier.cut(to: 64).debugDescription), which the host did not make"
            }
            sessions[index].restoration = report
        }
        return nil
    }

    /// What the app is given at launch: every session, with what it last reported, and those
    /// discarded while it was not running, marked so.
    var forLaunch: [WireSceneSession] {
        sessions.map { $0.restoration ?? WireSceneSession(identifier: $0.identifier) } + (untold ?? [])
    }

    /// The launch was given `forLaunch`: the discarded sessions are told.
    mutating func launched() {
        for session in untold ?? [] { discarded.insert(session.identifier) }
        untold = nil
    }

    /// Discards a session; one the running app has not been told of (`running` false) is kept
    /// to tell it at its next launch.
    mutating func discard(_ identifier: String, running: Bool) {
        guard let session = session(identifier) else { return }
        sessions.removeAll { $0.identifier == identifier }
        recency.removeAll { $0 == identifier }
        discarded.insert(identifier)
        if !running {
            var told = session.restoration ?? WireSceneSession(identifier: identifier)
            told.discarded = true
            untold = (untold ?? []) + [told]
        }
    }

    /// Discards every session (the user force quit the app, which removes them on iOS): the app
    /// is told at its next launch, which begins with a new session.
    mutating func discardAll() {
        for identifier in sessions.map(\.identifier) { discard(identifier, running: false) }
    }

    private mutating func setConnected(_ identifier: String, _ connected: Bool) {
        guard let index = sessions.firstIndex(where: { $0.identifier == identifier }) else { return }
        sessions[index].connected = connected
        if connected {
            recency.removeAll { $0 == identifier }
            recency.append(identifier)
        }
    }
}
