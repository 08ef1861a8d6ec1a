/// The scene sessions of the apps that adopt scenes (README.md, "Scenes" and "How the code is
/// laid out"), by bundle identifier, kept in the state directory across hosts: every change goes
/// through `change`, which saves (off the loop, coalesced) when what is kept changed — a
/// session made or discarded, the one in front, what the app reported — and not when a scene
/// merely connects or disconnects, which no host start keeps. Touched only on the host's loop.
final class SceneStore {
    private var sessions: [String: SceneSessions]
    private let store: StateStore<[String: SceneSessions]>
    /// What was wrong with the store at start, if anything.
    let loadWarning: String?

    /// Loads the sessions a host before left: none is connected to a process now.
    init(store: StateStore<[String: SceneSessions]>) {
        self.store = store
        let (loaded, warning) = store.load()
        sessions = (loaded ?? [:]).mapValues(\.kept)
        loadWarning = warning
    }

    /// The app's sessions (none yet: empty).
    subscript(app: String) -> SceneSessions { sessions[app] ?? SceneSessions() }

    /// Changes the app's sessions, and saves them if what is kept changed.
    @discardableResult
    func change<Result>(_ app: String, _ body: (inout SceneSessions) -> Result) -> Result {
        var value = self[app]
        let before = value.kept
        let result = body(&value)
        sessions[app] = value
        if value.kept != before { store.save(sessions) }
        return result
    }

    /// Returns once what was saved so far is on the disk.
    func flush() { store.flush() }
}

extension SceneSessions {
    /// What a host start keeps of them: the sessions, without their connections.
    var kept: SceneSessions {
        var kept = self
        kept.disconnectAll()
        return kept
    }
}
