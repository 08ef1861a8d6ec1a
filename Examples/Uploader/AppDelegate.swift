import AppHostKit
import Foundation
import Synchronization

/// Uploads a large file in chunks and keeps going in the background under a background task.
/// When the background time runs out, the expiration handler stops the upload, records how far
/// it got, and ends the task, so the app is suspended rather than killed (0x2182bad2). The next
/// launch resumes where it stopped.
final class AppDelegate: ApplicationDelegate {
    private nonisolated static let chunks = 100
    private let upload = Upload()
    private var task = BackgroundTaskIdentifier.invalid
    private let progressFile = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
        .appendingPathComponent("upload-progress")

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        let saved = (try? String(contentsOf: progressFile, encoding: .utf8)).flatMap { Int($0) } ?? 0
        upload.start(at: saved)
        print("Uploader: resuming at chunk \(saved) of \(Self.chunks)")
        return true
    }

    func applicationDidBecomeActive(_ application: Application) {
        guard task == .invalid, upload.sent < Self.chunks else { return }
        // Ask for background time before it is needed: the upload must survive leaving the app.
        task = application.beginBackgroundTask(withName: "Upload") { [weak self] in
            self?.stop(reason: "background time is running out")
        }
        let upload = self.upload
        Thread.detachNewThread { [weak self] in
            while upload.sendNextChunk(of: Self.chunks) {
                Thread.sleep(forTimeInterval: 0.1)  // one chunk over the network
            }
            DispatchQueue.main.async { self?.stop(reason: upload.sent == Self.chunks ? "done" : "stopped") }
        }
    }

    func applicationWillTerminate(_ application: Application) {
        stop(reason: "terminating")
    }

    /// Stops the upload, saves its progress and gives the background time back.
    private func stop(reason: String) {
        upload.cancel()
        try? String(upload.sent).write(to: progressFile, atomically: true, encoding: .utf8)
        print("Uploader: \(reason) at chunk \(upload.sent) of \(Self.chunks)")
        guard task != .invalid else { return }
        Application.shared.endBackgroundTask(task)
        task = .invalid
    }
}

/// The upload's progress, shared by the main thread and the uploading thread.
final class Upload: Sendable {
    private let state = Mutex((sent: 0, cancelled: false))

    var sent: Int { state.withLock { $0.sent } }

    func start(at chunk: Int) { state.withLock { $0 = (chunk, false) } }

    func cancel() { state.withLock { $0.cancelled = true } }

    /// Counts one more chunk as sent; false when done or cancelled.
    func sendNextChunk(of total: Int) -> Bool {
        state.withLock { state in
            guard !state.cancelled, state.sent < total else { return false }
            state.sent += 1
            return true
        }
    }
}
