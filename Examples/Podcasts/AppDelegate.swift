import AppHostKit
import Foundation

/// Downloads an episode in a background URL session and finishes it while suspended, as a
/// podcast app does:
/// - on its first launch it starts a download of the episode named by Info.plist's
///   `PodcastsEpisodeURL` in a background session (identifier com.example.podcasts.episodes);
/// - sent home, it is suspended; the host's transfer service goes on with the download;
/// - when it finishes, the host resumes the app in the background (or launches it, launch reason
///   `backgroundURLSession`) and calls `application(_:handleEventsForBackgroundURLSession:completionHandler:)`:
///   the app keeps the completion handler, its session delegate moves the file into
///   Documents/Episodes and updates the window, and `urlSessionDidFinishEvents` calls the handler,
///   so the host takes a new snapshot and suspends it again;
/// - a relaunch makes the session again, and `getAllTasks` says whether the episode is on its way.
///
/// Try it: serve a file (`python3 -m http.server 8000` in a directory with an episode.mp3), then
/// `apphost launch Podcasts.app`, `home`, and `transfers` while it downloads.
final class AppDelegate: ApplicationDelegate {
    let downloads = EpisodeDownloads()

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        let window = Window(content: "Podcasts: \(EpisodeDownloads.episodes().count) episode(s)")
        window.makeKeyAndVisible()
        downloads.window = window
        downloads.connect(startingWith: application.infoDictionary["PodcastsEpisodeURL"] as? String)
        return true
    }

    func application(
        _ application: Application, handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        print("Podcasts: woken for session \(identifier)")
        // Called once the session's delegate has had every event (urlSessionDidFinishEvents).
        downloads.eventsCompletionHandler = completionHandler
    }
}

/// The background session and its delegate. Its session delivers on the main queue
/// (`delegateQueue: .main`), so the delegate is a main-actor object, as its window is; with
/// `delegateQueue: nil` its methods would run on a serial queue of the session's own.
@MainActor
final class EpisodeDownloads: NSObject, @preconcurrency URLSessionDownloadDelegate {
    nonisolated static let identifier = "com.example.podcasts.episodes"
    nonisolated static let folder = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
        .appendingPathComponent("Episodes", isDirectory: true)
    var session: URLSession?
    var window: Window?
    var eventsCompletionHandler: (@Sendable () -> Void)?

    nonisolated static func episodes() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.sorted() ?? []
    }

    /// Makes the session (again, after a relaunch), and starts the episode's download unless it
    /// is here or on its way.
    func connect(startingWith address: String?) {
        let session = URLSession(
            configuration: .background(withIdentifier: Self.identifier), delegate: self, delegateQueue: .main)
        self.session = session
        session.getAllTasks { tasks in
            // On the delegate queue, the main one.
            guard tasks.isEmpty, Self.episodes().isEmpty, let address, let url = URL(string: address) else {
                print("Podcasts: \(tasks.count) download(s) on the way, \(Self.episodes().count) episode(s) here")
                return
            }
            let task = session.downloadTask(with: url)
            task.taskDescription = url.lastPathComponent
            task.resume()
            print("Podcasts: downloading \(url.absoluteString)")
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        // The file is removed when this returns: move it now.
        let name = downloadTask.originalRequest?.url?.lastPathComponent ?? "episode-\(downloadTask.taskIdentifier)"
        let destination = Self.folder.appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: Self.folder, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.moveItem(at: location, to: destination)
            print("Podcasts: saved \(name)")
        } catch {
            print("Podcasts: cannot keep \(name): \(error)")
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { print("Podcasts: download failed: \(error.localizedDescription)") }
        window?.content = "Podcasts: \(Self.episodes().count) episode(s)"
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        guard let handler = eventsCompletionHandler else { return }
        eventsCompletionHandler = nil
        DispatchQueue.main.async { handler() }
    }
}
