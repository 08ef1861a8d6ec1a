import AppHostKit
import Foundation

// The scene side of the probe: a test gives the bundle a UIApplicationSceneManifest naming
// ProbeFixture.SceneDelegate, and reads from Documents/lifecycle.log what the scene delegate saw
// (the scene's activationState and the app's applicationState inside each callback) and, with
// ProbeBehavior observeNotifications, each scene and application notification in posting order.

extension AppDelegate {
    func application(
        _ application: Application, configurationForConnecting connectingSceneSession: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        record("configurationForConnecting \(application.applicationState) main=\(Thread.isMainThread)")
        let name = behavior["sceneConfiguration"] as? String ?? "Default Configuration"
        return SceneConfiguration(name: name, sessionRole: connectingSceneSession.role)
    }

    func application(_ application: Application, didDiscardSceneSessions sceneSessions: Set<SceneSession>) {
        let identifiers = sceneSessions.map(\.persistentIdentifier).sorted().joined(separator: ",")
        record("didDiscardSceneSessions \(identifiers) \(application.applicationState) main=\(Thread.isMainThread)")
    }

    /// Records every life-cycle notification, scene and application, as it is posted.
    func observeNotifications() {
        let names: [Notification.Name] = [
            Scene.willConnectNotification, Scene.didDisconnectNotification, Scene.didActivateNotification,
            Scene.willDeactivateNotification, Scene.willEnterForegroundNotification, Scene.didEnterBackgroundNotification,
            Application.didFinishLaunchingNotification, Application.didBecomeActiveNotification,
            Application.willResignActiveNotification, Application.didEnterBackgroundNotification,
            Application.willEnterForegroundNotification, Application.willTerminateNotification,
        ]
        for name in names {
            _ = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [weak self] notification in
                let name = notification.name.rawValue
                MainActor.assumeIsolated { self?.record("notification \(name)") }
            }
        }
    }
}

/// The probe's scene delegate: records each callback with the scene's and the app's state.
final class SceneDelegate: WindowSceneDelegate {
    var window: Window?

    required init() {}

    private var probe: AppDelegate? { Application.shared.delegate as? AppDelegate }

    private func step(_ name: String, _ scene: Scene) {
        let application = Application.shared
        // With ProbeBehavior recordSceneSession, each line names the scene's session.
        let session = probe?.behavior["recordSceneSession"] as? Bool == true ? " #\(scene.session.persistentIdentifier)" : ""
        probe?.record("\(name)\(session) \(scene.activationState) app=\(application.applicationState) main=\(Thread.isMainThread)")
        if let hidden = probe?.behavior["hideOnResign"] as? String, name == "sceneWillResignActive" {
            window?.content = hidden
        }
    }

    private var restores: Bool { probe?.behavior["restoreScenes"] as? Bool == true }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions) {
        step("willConnectTo", scene)
        if restores, let activity = session.stateRestorationActivity {
            let item = activity.userInfo?["item"] as? String ?? "?"
            probe?.record("restored #\(session.persistentIdentifier) \(activity.activityType) item=\(item) visits=\(session.userInfo?["visits"] as? Int ?? 0)")
        }
        guard let windowScene = scene as? WindowScene else { return }
        let window = Window(windowScene: windowScene)
        window.content = "\(probe?.behavior["sceneWindowContent"] as? String ?? "Probe scene") \(session.persistentIdentifier)"
        window.makeKeyAndVisible()
        self.window = window
    }

    func sceneDidDisconnect(_ scene: Scene) { step("sceneDidDisconnect", scene) }
    func sceneWillEnterForeground(_ scene: Scene) { step("sceneWillEnterForeground", scene) }
    func sceneDidBecomeActive(_ scene: Scene) { step("sceneDidBecomeActive", scene) }
    func sceneWillResignActive(_ scene: Scene) { step("sceneWillResignActive", scene) }
    func sceneDidEnterBackground(_ scene: Scene) {
        step("sceneDidEnterBackground", scene)
        if restores { scene.session.userInfo = ["visits": (scene.session.userInfo?["visits"] as? Int ?? 0) + 1] }
    }

    /// With ProbeBehavior restoreScenes: what each scene is restored from.
    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        guard restores else { return nil }
        let activity = UserActivity(activityType: "com.example.probe.viewing")
        activity.userInfo = ["item": "item-\(scene.session.persistentIdentifier)"]
        return activity
    }
}
