import AppHostKit
import Foundation

// A reader with one page per scene (docs/lifecycle.md, "Scenes"): it supports multiple scenes, so
// `open Pages --new-scene` opens another page beside the others, and it restores each page when
// its session reconnects — after `close-scene`, a relaunch or a host restart — from the
// stateRestorationActivity its scene delegate gave when the scene went to the background.

final class AppDelegate: ApplicationDelegate {
    func application(
        _ application: Application, configurationForConnecting connectingSceneSession: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "Page", sessionRole: connectingSceneSession.role)
    }

    func application(_ application: Application, didDiscardSceneSessions sceneSessions: Set<SceneSession>) {
        for session in sceneSessions {
            print("Pages: discarded scene \(session.persistentIdentifier)")
        }
    }
}

/// One page: a new scene opens the next page; a reconnected one comes back to where it was.
final class PageSceneDelegate: WindowSceneDelegate {
    static let activityType = "com.example.pages.reading"

    var window: Window?
    private var page = 1
    private var reads = 0

    required init() {}

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions) {
        guard let windowScene = scene as? WindowScene else { return }
        let restored = session.stateRestorationActivity.flatMap { $0.activityType == Self.activityType ? $0.userInfo : nil }
        if let restored {
            page = restored["page"] as? Int ?? 1
            reads = session.userInfo?["reads"] as? Int ?? 0
        } else {
            // A new page follows the pages open in the other scenes.
            page = Application.shared.openSessions.count
        }
        let window = Window(windowScene: windowScene)
        window.makeKeyAndVisible()
        self.window = window
        print("Pages: scene \(session.persistentIdentifier) shows page \(page) (\(restored == nil ? "new" : "restored"), read \(reads) times)")
    }

    func sceneWillEnterForeground(_ scene: Scene) {
        reads += 1
        window?.content = "Page \(page), read \(reads) times"
    }

    func sceneDidEnterBackground(_ scene: Scene) {
        scene.session.userInfo = ["reads": reads]
    }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        let activity = UserActivity(activityType: Self.activityType)
        activity.title = "Page \(page)"
        activity.userInfo = ["page": page]
        return activity
    }

    func sceneDidDisconnect(_ scene: Scene) {
        print("Pages: scene \(scene.session.persistentIdentifier) disconnected at page \(page)")
    }
}
