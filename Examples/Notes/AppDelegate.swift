import AppHostKit
import Foundation

/// A notes app. It saves its notes when it stops being active (the last moment it is sure to
/// run), hides them from the app-switcher snapshot, and finishes syncing a backup under a
/// background task when it goes to the background.
final class AppDelegate: ApplicationDelegate {
    private var notes: [String] = []
    private let window = Window()
    private var syncTask = BackgroundTaskIdentifier.invalid

    private let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
    private var notesFile: URL { documents.appendingPathComponent("notes.json") }
    private var backupFile: URL { documents.appendingPathComponent("notes-backup.json") }

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        if let data = try? Data(contentsOf: notesFile) {
            notes = (try? JSONDecoder().decode([String].self, from: data)) ?? []
        }
        notes.append("Opened at \(Date())")
        window.makeKeyAndVisible()
        show()
        return true
    }

    func applicationWillResignActive(_ application: Application) {
        save()
        window.content = "Notes (locked)"  // the snapshot must not show the notes
    }

    func applicationDidEnterBackground(_ application: Application) {
        // Syncing takes a while: ask for background time, and give it back when done — or when
        // the time runs out, whichever comes first.
        syncTask = application.beginBackgroundTask(withName: "Sync notes") { [weak self] in
            self?.endSync()
        }
        let notes = self.notes
        let backupFile = self.backupFile
        DispatchQueue.global().async {
            Thread.sleep(forTimeInterval: 0.2)  // stands in for talking to a server
            try? JSONEncoder().encode(notes).write(to: backupFile, options: .atomic)
            DispatchQueue.main.async { [weak self] in self?.endSync() }
        }
    }

    func applicationWillEnterForeground(_ application: Application) {
        show()
    }

    func applicationWillTerminate(_ application: Application) {
        save()
    }

    private func endSync() {
        guard syncTask != .invalid else { return }
        Application.shared.endBackgroundTask(syncTask)
        syncTask = .invalid
    }

    private func save() {
        try? JSONEncoder().encode(notes).write(to: notesFile, options: .atomic)
    }

    private func show() {
        window.content = "Notes: \(notes.count) notes; latest: \(notes.last ?? "none")"
    }
}
