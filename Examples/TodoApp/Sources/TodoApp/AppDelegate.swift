import AppHostKit
import Foundation

/// A to-do app. It keeps its list in its container's Documents/todos.json, saves it under a
/// background task when it goes to the background (stopping cleanly if the time runs out), and
/// syncs it with a BGAppRefreshTask it asks for every time it leaves the foreground.
///
/// It finds its files through `Application.containerURL` rather than Foundation's look-ups, so
/// its unit tests (Tests/TodoAppTests) can run it detached, in a temporary container.
final class AppDelegate: ApplicationDelegate {
    static let syncTask = "com.example.todo.sync"
    /// What a sync brings in (a server's list, in a real app).
    static let shared = ["Review the shared list"]

    private(set) var list = TodoList()
    let window = Window()
    /// How long writing the list takes; a test stretches it to see the expiration handler.
    var saveDuration: TimeInterval = 0.05
    private var saveTask = BackgroundTaskIdentifier.invalid

    private var file: URL {
        Application.shared.containerURL.appendingPathComponent("Documents/todos.json")
    }

    /// The list as last saved, nil if never.
    var saved: TodoList? {
        (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode(TodoList.self, from: $0) }
    }

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        list = saved ?? .starter
        BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.syncTask, using: .main) { task in
            MainActor.assumeIsolated { self.sync(task) }
        }
        window.makeKeyAndVisible()
        show()
        return true
    }

    func applicationDidEnterBackground(_ application: Application) {
        // Writing takes a while: ask for background time, and give it back when done — or, if
        // the time runs out first, write what there is at once and give it back then.
        saveTask = application.beginBackgroundTask(withName: "Save todos") { [weak self] in
            self?.endSave(application, writing: true)
        }
        let data = (try? JSONEncoder().encode(list)) ?? Data()
        let file = self.file
        let duration = saveDuration
        DispatchQueue.global().asyncAfter(deadline: .now() + duration) {
            try? data.write(to: file, options: .atomic)
            DispatchQueue.main.async { MainActor.assumeIsolated { self.endSave(application, writing: false) } }
        }
        let request = BGAppRefreshTaskRequest(identifier: Self.syncTask)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
        try? BGTaskScheduler.shared.submit(request)
    }

    func applicationWillTerminate(_ application: Application) {
        save()
    }

    /// Adds an item (the app's one piece of UI, in this example).
    func add(_ title: String) {
        list.add(title)
        show()
    }

    private func sync(_ task: BGTask) {
        task.expirationHandler = { task.setTaskCompleted(success: false) }
        list.merge(Self.shared)
        save()
        show()
        task.setTaskCompleted(success: true)
    }

    private func endSave(_ application: Application, writing: Bool) {
        guard saveTask != .invalid else { return }
        if writing { save() }
        application.endBackgroundTask(saveTask)
        saveTask = .invalid
    }

    private func save() {
        try? JSONEncoder().encode(list).write(to: file, options: .atomic)
    }

    private func show() {
        window.content = list.summary
    }
}
