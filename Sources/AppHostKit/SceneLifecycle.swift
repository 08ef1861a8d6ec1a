import Foundation
import AppHostProtocol

// The scene life cycle (docs/lifecycle.md, "Scenes"). The host drives the app's state, as for every app;
// for an app that adopts scenes (its Info.plist declares UIApplicationSceneManifest, which the
// host validated and sent in the configuration) the SDK turns each of the app's transitions into
// its scene's, as UIKit derives the app's state from its scenes: the scene delegate is called
// instead of the app delegate's foreground and background methods, the UIScene notification is
// posted after each scene-delegate method, and UIApplication's own notification after that.

/// The scenes of a scene-based app: its sessions and the scenes connected to them.
@MainActor
final class SceneDriver {
    private let manifest: WireSceneManifest
    private let link: HostLink
    /// Every open session, oldest first.
    private(set) var sessions: [SceneSession] = []
    /// The scenes connected now, in the order they connected (a session holds its scene weakly).
    private(set) var connectedScenes: [Scene] = []
    /// The scene last brought to the foreground, while connected: its window is the snapshot.
    private var front: Scene?

    var supportsMultipleScenes: Bool { manifest.supportsMultipleScenes }

    /// What was last reported to the host, so that only a change is sent.
    private var reported: [WireSceneSession] = []
    /// Sessions discarded while the app was not running (a force quit, `discard-scene`): the
    /// app hears of them once didFinishLaunching has returned, before any scene connects.
    private var discardedAtLaunch: [SceneSession] = []

    /// The driver of an app with `manifest`, given the sessions the host kept (none connected):
    /// each keeps its configuration, `userInfo` and `stateRestorationActivity`.
    init(manifest: WireSceneManifest, link: HostLink, sessions kept: [WireSceneSession] = []) {
        self.manifest = manifest
        self.link = link
        reported = kept.filter { $0.discarded != true }
        for stored in kept {
            let role = SceneSession.Role.windowApplication
            let entry = manifest.configurations.first { $0.name == stored.configuration } ?? manifest.configurations.first
            let configuration = SceneConfiguration(name: entry?.name, sessionRole: role)
            configuration.delegateClass = entry.flatMap { delegateClass(named: $0.delegateClassName) }
            let session = SceneSession(persistentIdentifier: stored.identifier, role: role, configuration: configuration)
            session.userInfo = stored.userInfo.flatMap(Self.dictionary)
            if let type = stored.activityType {
                let activity = UserActivity(activityType: type)
                activity.userInfo = stored.activityUserInfo.flatMap(Self.dictionary).map { Dictionary(uniqueKeysWithValues: $0.map { (AnyHashable($0.key), $0.value) }) }
                session.stateRestorationActivity = activity
            }
            if stored.discarded == true { discardedAtLaunch.append(session) } else { sessions.append(session) }
        }
    }

    /// didFinishLaunching has returned: `application(_:didDiscardSceneSessions:)` for the sessions
    /// discarded while the app was not running, as UIKit calls it "the next time your app launches".
    func launchFinished(_ application: Application, _ delegate: any ApplicationDelegateCallbacks) {
        guard !discardedAtLaunch.isEmpty else { return }
        let discarded = Set(discardedAtLaunch)
        discardedAtLaunch = []
        delegate.application(application, didDiscardSceneSessions: discarded)
    }

    /// Tells the host what its sessions hold now, if that changed since it was last told.
    func report() {
        let now = sessions.map { session in
            WireSceneSession(
                identifier: session.persistentIdentifier, configuration: session.configuration.name,
                userInfo: session.userInfo.flatMap { json($0, what: "userInfo of scene session \(session.persistentIdentifier)") },
                activityType: session.stateRestorationActivity?.activityType,
                activityUserInfo: session.stateRestorationActivity?.userInfo.flatMap { info in
                    json(Dictionary(uniqueKeysWithValues: info.map { ("\($0.key.base)", $0.value) }),
                         what: "stateRestorationActivity userInfo of scene session \(session.persistentIdentifier)")
                })
        }
        guard now != reported else { return }
        reported = now
        link.send(.sceneSessions(now))
    }

    /// `value` as a JSON object, or nil with a warning when it holds what JSON cannot.
    private func json(_ value: [String: Any], what: String) -> String? {
        guard JSONSerialization.isValidJSONObject(value), let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else {
            link.warn("the \(what) holds values JSON cannot represent; it is not kept")
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func dictionary(_ json: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
    }

    /// Runs the scene side of an app-level transition, or a scene operation; true if it stands
    /// in for the app delegate's method (which is then not called, as UIKit does for an app
    /// with scenes). `target` is the session the host names (nil outside a host: the last one).
    func run(_ callback: WireCallback, target: String?, _ application: Application, _ delegate: any ApplicationDelegateCallbacks) -> Bool {
        switch callback {
        case .willEnterForeground:
            // The host's front scene comes forward: connected in the background, or connected
            // now (an app launched into the background and now opened, a session it closed).
            bringForward(target, application, delegate)
            return true
        case .didBecomeActive:
            if !connectedScenes.contains(where: { $0.activationState == .foregroundInactive }) {
                // Launched to the foreground: inactive while the scene connects, as while launching.
                application.applicationState = .inactive
                bringForward(target, application, delegate)
                // The app came to the foreground with the scene: UIKit posts the app's
                // notification after the scene's, at launch too.
                application.post(Application.willEnterForegroundNotification)
            }
            forEachScene(in: [.foregroundInactive]) { becomeActive($0, application) }
            return true
        case .willResignActive:
            forEachScene(in: [.foregroundActive]) { resignActive($0, application) }
            return true
        case .didEnterBackground:
            // A background launch connects no scene; a scene already in the background (an app
            // resumed into the background for an event) is called nothing again.
            forEachScene(in: [.foregroundActive, .foregroundInactive]) { enterBackground($0, application) }
            return true
        case .willTerminate:
            // Termination disconnects every connected scene first (sceneDidDisconnect: the session
            // is not discarded), then the app delegate hears applicationWillTerminate.
            forEachScene(in: [.foregroundActive, .foregroundInactive, .background]) { disconnect($0, application) }
            return false
        case .connectScene:
            // Another scene in place of the one in the foreground. The new one comes to the
            // foreground before the old one leaves, so the app (its state derived from its scenes)
            // stays in the foreground: active, inactive while they change places, active again.
            let leaving = connectedScenes.filter { $0.activationState == .foregroundActive || $0.activationState == .foregroundInactive }
            for scene in leaving where scene.activationState == .foregroundActive {
                resignActive(scene, application)
                application.post(Application.willResignActiveNotification)
            }
            bringForward(target, application, delegate)
            for scene in leaving { enterBackground(scene, application) }
            forEachScene(in: [.foregroundInactive]) { becomeActive($0, application) }
            application.post(Application.didBecomeActiveNotification)
            return true
        case .disconnectScene:
            if let scene = connectedScenes.first(where: { $0.session.persistentIdentifier == target }) { disconnect(scene, application) }
            return true
        case .discardScene:
            guard let session = sessions.first(where: { $0.persistentIdentifier == target }) else { return true }
            if let scene = session.scene { disconnect(scene, application) }
            sessions.removeAll { $0 === session }
            delegate.application(application, didDiscardSceneSessions: [session])
            return true
        case .snapshot, .willFinishLaunching, .didFinishLaunching, .didReceiveMemoryWarning, .performFetch,
             .didReceiveRemoteNotification, .launchTask, .didReceiveIncomingPush, .didUpdateLocations,
             .handleEventsForBackgroundURLSession:
            return false
        }
    }

    /// The front scene's visible windows (the scene last in the foreground): the app's snapshot.
    func snapshot() -> String {
        ((front as? WindowScene)?.windows ?? []).filter { !$0.isHidden }.map(\.content).joined(separator: "\n")
    }

    /// Brings session `target` to the foreground: its scene if connected (in the background),
    /// else a scene connected for it now (a new session if the app does not have it).
    private func bringForward(_ target: String?, _ application: Application, _ delegate: any ApplicationDelegateCallbacks) {
        let identifier = target ?? front?.session.persistentIdentifier ?? sessions.last?.persistentIdentifier
        if let scene = connectedScenes.first(where: { $0.session.persistentIdentifier == identifier }) {
            if scene.activationState == .background { enterForeground(scene, application) }
        } else {
            connect(identifier ?? UUID().uuidString, application, delegate)
        }
    }

    /// A scene for session `identifier`, then to the foreground: for a new session,
    /// `configurationForConnecting` first (a session the app has, whose scene was disconnected,
    /// keeps its configuration, as UIKit asks only for new sessions); the scene delegate made from
    /// the configuration's class; `scene(_:willConnectTo:options:)`.
    private func connect(_ identifier: String, _ application: Application, _ delegate: any ApplicationDelegateCallbacks) {
        let options = Scene.ConnectionOptions()
        let session = sessions.first { $0.persistentIdentifier == identifier } ?? newSession(identifier, options, application, delegate)
        let configuration = session.configuration
        let sceneType = (configuration.sceneClass as? Scene.Type) ?? WindowScene.self
        let scene = sceneType.init(session: session, connectionOptions: options)
        session.scene = scene
        scene.delegate = configuration.delegateClass.flatMap(ClassInstantiation.make) as? any SceneDelegateCallbacks
        connectedScenes.append(scene)
        call(scene, application) { $0.scene(scene, willConnectTo: session, options: options) }
        NotificationCenter.default.post(name: Scene.willConnectNotification, object: scene)
        enterForeground(scene, application)
    }

    /// A new session, configured by the app delegate's `configurationForConnecting`.
    private func newSession(
        _ identifier: String, _ options: Scene.ConnectionOptions, _ application: Application, _ delegate: any ApplicationDelegateCallbacks
    ) -> SceneSession {
        let role = SceneSession.Role.windowApplication
        let first = manifest.configurations.first
        let session = SceneSession(
            persistentIdentifier: identifier, role: role, configuration: SceneConfiguration(name: first?.name, sessionRole: role))
        sessions.append(session)
        let asked = delegate.application(application, configurationForConnecting: session, options: options)
        // A configuration made in code with no name (the delegate's default) is the manifest's first.
        let entry = manifest.configurations.first { $0.name == (asked.name ?? first?.name) }
        let configuration = SceneConfiguration(name: asked.name ?? entry?.name, sessionRole: role)
        configuration.sceneClass = asked.sceneClass
        configuration.delegateClass = asked.delegateClass ?? entry.flatMap { delegateClass(named: $0.delegateClassName) }
        if asked.name != nil, entry == nil, asked.delegateClass == nil {
            link.warn(
                "configurationForConnecting returned configuration \(asked.name!), which Info.plist's UIApplicationSceneManifest "
                    + "does not have (it has \(manifest.configurations.map(\.name).joined(separator: ", "))); the scene connects without a delegate")
        }
        session.configuration = configuration
        return session
    }

    /// `sceneWillEnterForeground` (the scene still in its old state), then foreground-inactive.
    private func enterForeground(_ scene: Scene, _ application: Application) {
        front = scene
        call(scene, application) { $0.sceneWillEnterForeground(scene) }
        scene.activationState = .foregroundInactive
        NotificationCenter.default.post(name: Scene.willEnterForegroundNotification, object: scene)
        derive(application)
    }

    private func becomeActive(_ scene: Scene, _ application: Application) {
        scene.activationState = .foregroundActive
        derive(application)
        call(scene, application) { $0.sceneDidBecomeActive(scene) }
        NotificationCenter.default.post(name: Scene.didActivateNotification, object: scene)
    }

    private func resignActive(_ scene: Scene, _ application: Application) {
        call(scene, application) { $0.sceneWillResignActive(scene) }
        scene.activationState = .foregroundInactive
        NotificationCenter.default.post(name: Scene.willDeactivateNotification, object: scene)
        derive(application)
    }

    /// `sceneDidEnterBackground`, then the delegate's `stateRestorationActivity(for:)`, kept
    /// with the session.
    private func enterBackground(_ scene: Scene, _ application: Application) {
        scene.activationState = .background
        derive(application)
        call(scene, application) { $0.sceneDidEnterBackground(scene) }
        NotificationCenter.default.post(name: Scene.didEnterBackgroundNotification, object: scene)
        if let delegate = scene.delegate { scene.session.stateRestorationActivity = delegate.stateRestorationActivity(for: scene) }
    }

    /// `sceneDidDisconnect`: the scene and its windows go, its session stays.
    private func disconnect(_ scene: Scene, _ application: Application) {
        call(scene, application) { $0.sceneDidDisconnect(scene) }
        NotificationCenter.default.post(name: Scene.didDisconnectNotification, object: scene)
        scene.activationState = .unattached
        let windows = (scene as? WindowScene)?.windows ?? []
        application.windows.removeAll { window in windows.contains { $0 === window } }
        scene.session.scene = nil
        connectedScenes.removeAll { $0 === scene }
        if front === scene { front = nil }
    }

    /// Runs `body` for each connected scene whose state is one of `states`.
    private func forEachScene(in states: [Scene.ActivationState], _ body: (Scene) -> Void) {
        for scene in connectedScenes where states.contains(scene.activationState) { body(scene) }
    }

    /// Calls the scene's delegate, if it has one.
    private func call(_ scene: Scene, _ application: Application, _ body: (any SceneDelegateCallbacks) -> Void) {
        if let delegate = scene.delegate { body(delegate) }
    }

    /// The app's state as UIKit derives it from its scenes: active if one is foreground-active,
    /// inactive if one is foreground-inactive, else background (unchanged while none is attached).
    private func derive(_ application: Application) {
        let states = connectedScenes.map(\.activationState)
        if states.contains(.foregroundActive) {
            application.applicationState = .active
        } else if states.contains(.foregroundInactive) {
            application.applicationState = .inactive
        } else if states.contains(.background) {
            application.applicationState = .background
        }
    }

    private func delegateClass(named name: String) -> AnyClass? {
        guard let type = typeNamed(name) else {
            link.warn("Info.plist: UISceneDelegateClassName names \(name), which does not exist in the plugin; the scene connects without a delegate")
            return nil
        }
        guard let delegateType = ownConformance(of: type, to: DelegateProtocolName.scene, as: (any SceneDelegate.Type).self)
                ?? type as? any SceneDelegateCallbacks.Type else {
            link.warn("Info.plist: UISceneDelegateClassName names \(name), which does not conform to UISceneDelegate; the scene connects without a delegate")
            return nil
        }
        let delegateClass: AnyClass = delegateType
        return delegateClass
    }
}

extension Application {
    /// Posts `name` with this application as its object.
    func post(_ name: Notification.Name) {
        NotificationCenter.default.post(name: name, object: self)
    }
}
