import AppHostKit
import Foundation
import Synchronization

/// Prunes its cache with a BGProcessingTask that needs external power, as a photo or mail app
/// does its maintenance while the phone charges:
/// - it registers the task's launch handler while launching;
/// - while in use it fills Library/Caches with thumbnails;
/// - whenever it leaves the foreground it asks for a processing task at most once a day, that
///   requires external power, so the host runs it only while plugged in (`power plugged`);
/// - the task deletes cache files one at a time on a background queue, checking a stop flag
///   between files. The host ends the task early when the user opens the app, when the power is
///   unplugged or when its minutes run out: the expiration handler sets the flag, and the task
///   completes unsuccessfully having kept what it did (and asks to run again later);
/// - Documents/cleanup.log says what each run did.
///
/// Try it: `apphost launch --power battery Cleanup.app`, then `home`, `advance 86400`, `tasks`,
/// `power plugged`.
final class AppDelegate: ApplicationDelegate {
    nonisolated static let pruneIdentifier = "com.example.cleanup.prune"
    private nonisolated static let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
        .appendingPathComponent("thumbnails", isDirectory: true)

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.pruneIdentifier, using: nil) { task in
            Self.prune(task)
        }
        Window(content: "Cleanup").makeKeyAndVisible()
        return true
    }

    func applicationDidBecomeActive(_ application: Application) {
        // Using the app leaves thumbnails behind.
        try? FileManager.default.createDirectory(at: Self.caches, withIntermediateDirectories: true)
        for index in 0..<40 {
            try? Data(repeating: UInt8(index), count: 4096).write(to: Self.caches.appendingPathComponent("thumb-\(index).jpg"))
        }
    }

    func applicationDidEnterBackground(_ application: Application) {
        Self.schedulePrune()
    }

    private nonisolated static func schedulePrune() {
        let request = BGProcessingTaskRequest(identifier: pruneIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 24 * 3600)
        request.requiresExternalPower = true
        request.requiresNetworkConnectivity = false
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            print("Cleanup: cannot schedule pruning: \(error)")
        }
    }

    /// Runs on a background queue (registered with a nil queue).
    private nonisolated static func prune(_ task: BGTask) {
        let stop = Atomic<Bool>(false)
        task.expirationHandler = { stop.store(true, ordering: .releasing) }
        let files = (try? FileManager.default.contentsOfDirectory(at: caches, includingPropertiesForKeys: nil)) ?? []
        var removed = 0
        for file in files {
            guard !stop.load(ordering: .acquiring) else { break }
            try? FileManager.default.removeItem(at: file)
            removed += 1
            Thread.sleep(forTimeInterval: 0.005)  // real pruning is slower than unlinking
        }
        let finished = removed == files.count
        log("removed \(removed) of \(files.count) cache files\(finished ? "" : "; stopped early")")
        if !finished { schedulePrune() }
        task.setTaskCompleted(success: finished)
    }

    private nonisolated static func log(_ line: String) {
        let url = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0].appendingPathComponent("cleanup.log")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        try? (text + line + "\n").write(to: url, atomically: true, encoding: .utf8)
        print("Cleanup: \(line)")
    }
}
