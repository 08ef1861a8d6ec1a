import AppHostProtocol

/// The scene sessions of the apps that adopt scenes (docs/lifecycle.md, "Scenes" and "How the code is
/// laid out"), by bundle identifier, kept in the state directory across hosts, and the rules of
/// the scene commands: which session connects, which may be closed or discarded, what a launch
/// is told, what a force quit removes. It answers with effects the host performs
/// (HostLoop+Scenes.swift), or a refusal. Every change saves (off the loop, coalesced) when
/// what is kept changed — a session made or discarded, the one in front, what the app reported —
/// and not when a scene merely connects or disconnects, which no host start keeps. Touched only
/// on the host's loop.
final class SceneStore {
    /// At most this many sessions in one report, and this many bytes of each JSON object in it.
    static let maximumReportedSessions = 64
    static let maximumRestorationBytes = 16 * 1024

    /// What the scene rules need to know of an app, as the host sees it now.
    struct App: Equatable {
        var identifier: String
        var name: String
        var manifest: WireSceneManifest?
        /// Its process runs and is not ending.
        var isLive = false
        var isInForeground = false
        /// Its launch has not reached its callbacks yet (launching or starting).
        var isStarting = false
        /// Its state, `notRunning` without a live process.
        var state: AppState = .notRunning
    }

    /// What the host does for a scene command, to the app it names.
    enum Effect: Equatable {
        /// The machine's scene operation for the app's run (delivered when no callback runs).
        case operation(WireCallback, session: String)
        /// Open the app: it comes to the foreground with its front session.
        case open

        /// The session an operation is on.
        var session: String? {
            if case .operation(_, let session) = self { session } else { nil }
        }
    }

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

    /// Returns once what was saved so far is on the disk.
    func flush() { store.flush() }

    /// `flush`, to call from another thread (the store is thread-safe; this type is not).
    var flushing: @Sendable () -> Void { { [store] in store.flush() } }

    // MARK: Commands

    /// `open APP --new-scene`: a new session, connected in place of the scene in the foreground
    /// if the app is there (and past its launch), else the one the app is opened with.
    func openNewScene(_ app: App) throws(SupervisorError) -> Effect {
        guard let manifest = app.manifest else {
            throw SupervisorError("\(app.name) does not adopt scenes (its Info.plist has no UIApplicationSceneManifest)", code: .refused)
        }
        guard manifest.supportsMultipleScenes else {
            throw SupervisorError(
                "\(app.name) does not support multiple scenes (UIApplicationSupportsMultipleScenes is false); open \(app.name) brings its scene forward",
                code: .refused)
        }
        let session = change(app.identifier) { $0.add() }
        guard app.isLive, app.isInForeground, !app.isStarting else { return .open }
        change(app.identifier) { $0.markConnected(session) }
        return .operation(.connectScene, session: session)
    }

    /// `close-scene`: the connected session's scene disconnects (`sceneDidDisconnect`); the
    /// session stays.
    func close(_ session: String, of app: App) throws(SupervisorError) -> Effect {
        try checkTarget(session, of: app, verb: "close")
        guard app.isLive, self[app.identifier].session(session)?.connected == true else {
            throw SupervisorError("scene \(session) of \(app.name) is not connected; scenes lists them", code: .wrongState)
        }
        change(app.identifier) { $0.disconnect(session) }
        return .operation(.disconnectScene, session: session)
    }

    /// `discard-scene`: the session goes; a running app is told at once
    /// (`application(_:didDiscardSceneSessions:)`), another at its next launch.
    func discard(_ session: String, of app: App) throws(SupervisorError) -> Effect? {
        try checkTarget(session, of: app, verb: "discard")
        change(app.identifier) { $0.discard(session, running: app.isLive) }
        return app.isLive ? .operation(.discardScene, session: session) : nil
    }

    /// The app adopts scenes, has the session, and the session is not the one in the foreground.
    private func checkTarget(_ session: String, of app: App, verb: String) throws(SupervisorError) {
        guard app.manifest != nil else {
            throw SupervisorError("\(app.name) does not adopt scenes (its Info.plist has no UIApplicationSceneManifest)", code: .refused)
        }
        let kept = self[app.identifier]
        guard kept.session(session) != nil else {
            let known = kept.sessions.map(\.identifier)
            throw SupervisorError(
                "\(app.name) has no scene session \(session); \(known.isEmpty ? "it has none" : "its sessions: \(known.joined(separator: ", "))")",
                code: .wrongState)
        }
        if app.isLive, app.isInForeground, kept.front == session {
            throw SupervisorError(
                "scene \(session) is \(app.name)'s scene in the foreground; send the app home first (home) to \(verb) it",
                code: .wrongState)
        }
    }

    /// The sessions of these apps (those that adopt scenes), with their scenes' states (`scenes`).
    func listing(_ apps: [App]) -> [SceneListing] {
        apps.filter { $0.manifest != nil }.flatMap { app -> [SceneListing] in
            let kept = self[app.identifier]
            return kept.sessions.map { session in
                let state: String
                if !session.connected || !app.isLive {
                    state = "unattached"
                } else if session.identifier == kept.front {
                    switch app.state {
                    case .active: state = "foregroundActive"
                    case .inactive, .launching: state = "foregroundInactive"
                    default: state = "background"
                    }
                } else {
                    state = "background"
                }
                return SceneListing(
                    app: app.name, bundleIdentifier: app.identifier, session: session.identifier,
                    state: state, front: session.identifier == kept.front, appState: app.state)
            }
        }
    }

    // MARK: The app's life

    /// A callback on its way to the app, with the scene it concerns: a scene app comes to the
    /// foreground (willEnterForeground, didBecomeActive) with its front session (a new one if it
    /// has none), connected now (docs/lifecycle.md, "Scenes"). Any other is sent as it is.
    func prepare(_ request: WireCallbackRequest, for bundle: AppBundle) -> WireCallbackRequest {
        guard bundle.adoptsScenes, request.scene == nil else { return request }
        var request = request
        request.scene = sceneComingForward(bundle.identifier, with: request.callback)
        return request
    }

    /// The scene `callback` brings forward, connected now: the front session for
    /// willEnterForeground and didBecomeActive; nil for any other callback.
    func sceneComingForward(_ app: String, with callback: WireCallback) -> String? {
        guard [.willEnterForeground, .didBecomeActive].contains(callback) else { return nil }
        return change(app) { $0.connectFront() }
    }

    /// A new process of the app starts: no scene is connected yet (the sessions stay).
    func processStarts(_ app: String) {
        change(app) { $0.disconnectAll() }
    }

    /// What the app's launch is given: every session, with what it last reported, and those
    /// discarded while it was not running, marked so (told now, not again).
    func sessionsForLaunch(_ app: String) -> [WireSceneSession] {
        change(app) { sessions in
            defer { sessions.launched() }
            return sessions.forLaunch
        }
    }

    /// The user force quit the app, which removes its sessions from the app switcher: they are
    /// discarded, told at its next launch, which begins with a new session.
    func forceQuit(_ app: String) {
        change(app) { $0.discardAll() }
    }

    /// As iOS reclaims memory from an app with scenes: each scene connected in the background
    /// (all but the front one of an app in the foreground) disconnects; the sessions stay.
    func disconnectBackgroundScenes(of app: App) -> [Effect] {
        guard app.manifest != nil, app.isLive else { return [] }
        let kept = self[app.identifier]
        let inForeground = app.isInForeground ? kept.front : nil
        let background = kept.sessions.filter { $0.connected && $0.identifier != inForeground }.map(\.identifier)
        for session in background { change(app.identifier) { $0.disconnect(session) } }
        return background.map { .operation(.disconnectScene, session: $0) }
    }

    /// The app's report of its sessions' restoration data, checked and kept; or why it breaks the
    /// protocol.
    func receive(_ reported: [WireSceneSession], from app: App) -> String? {
        guard app.manifest != nil else { return "it reported scene sessions, but it does not adopt scenes" }
        guard reported.count <= Self.maximumReportedSessions else {
            return "it reported \(reported.count) scene sessions; at most \(Self.maximumReportedSessions) are kept"
        }
        for session in reported {
            let sizes = [session.userInfo, session.activityUserInfo].map { $0?.utf8.count ?? 0 }
            let names = [session.configuration, session.activityType].map { $0?.utf8.count ?? 0 }
            guard sizes.allSatisfy({ $0 <= Self.maximumRestorationBytes }), names.allSatisfy({ $0 <= 256 }) else {
                return "it reported scene session \(session.identifier.cut(to: 64).debugDescription) with more than the "
                    + "\(Self.maximumRestorationBytes) bytes of userInfo or 256 bytes of a name that are kept"
            }
        }
        return change(app.identifier) { $0.restore(reported) }
    }

    /// Changes the app's sessions, and saves them if what is kept changed.
    @discardableResult
    private func change<Result>(_ app: String, _ body: (inout SceneSessions) -> Result) -> Result {
        var value = self[app]
        let before = value.kept
        let result = body(&value)
        sessions[app] = value
        if value.kept != before { store.save(sessions) }
        return result
    }
}

extension SceneSessions {
    /// What a host start keeps of them: the sessions, without their connections.
    var kept: SceneSessions {
        var kept = self
        kept.disconnectAll()
        return kept
    }
}
