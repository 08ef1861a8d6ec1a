import AppHostKit
import Foundation

// A journal app with one scene (docs/lifecycle.md, "Scenes"): Info.plist declares
// UIApplicationSceneManifest, so its user interface lives in SceneDelegate, which the host drives
// through connection, foreground, background and disconnection; the app delegate only launches
// it, answers configurationForConnecting and hears applicationWillTerminate.

/// Where the journal's entries are kept: Documents/journal.json.
@MainActor
enum Journal {
    static var file: URL {
        FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0].appendingPathComponent("journal.json")
    }

    static func load() -> [String] {
        (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode([String].self, from: $0) } ?? []
    }

    static func save(_ entries: [String]) {
        try? JSONEncoder().encode(entries).write(to: file, options: .atomic)
    }
}

final class AppDelegate: ApplicationDelegate {
    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        print("Journal launched; \(Journal.load().count) entries so far")
        return true
    }

    func application(
        _ application: Application, configurationForConnecting connectingSceneSession: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "Default Configuration", sessionRole: connectingSceneSession.role)
    }

    func applicationWillTerminate(_ application: Application) {
        print("Journal terminated")
    }
}

/// The journal's one scene: a window showing the entries. Each visit to the foreground adds an
/// entry; the entries are saved when the scene goes to the background (the last moment it is
/// sure to run) and when it is disconnected; the snapshot shows the journal locked.
final class SceneDelegate: WindowSceneDelegate {
    var window: Window?
    private var entries: [String] = []

    required init() {}

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions) {
        guard let windowScene = scene as? WindowScene else { return }
        entries = Journal.load()
        let window = Window(windowScene: windowScene)
        window.makeKeyAndVisible()
        self.window = window
    }

    func sceneWillEnterForeground(_ scene: Scene) {
        entries.append("Visited at \(Date())")
        window?.content = "Journal: \(entries.count) entries; latest: \(entries.last ?? "none")"
    }

    func sceneDidBecomeActive(_ scene: Scene) {
        print("Journal scene active (app state \(Application.shared.applicationState))")
    }

    func sceneWillResignActive(_ scene: Scene) {
        window?.content = "Journal (locked)"  // the snapshot must not show the entries
    }

    func sceneDidEnterBackground(_ scene: Scene) {
        Journal.save(entries)
    }

    func sceneDidDisconnect(_ scene: Scene) {
        Journal.save(entries)
        print("Journal scene disconnected")
    }
}
