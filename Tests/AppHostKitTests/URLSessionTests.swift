import Foundation
import Testing
import UIKit

/// A session delegate written as on iOS, through `import UIKit` (which brings Foundation's
/// background-session names, from AppHostKit).
@MainActor
final class RecordingSessionDelegate: NSObject, URLSessionDownloadDelegate {
    var completions: [(Int, Int?)] = []

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {}

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        completions.append((task.taskIdentifier, (error as? URLError)?.code.rawValue))
    }
}

/// The SDK's background sessions outside a host: tasks are numbered per session, and bad input
/// ends a task at once with Foundation's error, before anything reaches the host.
@Suite(.serialized)
struct URLSessionTests {
    @MainActor @Test func badURLsAndUploadFilesOutsideTheContainerEndTheTaskWithAnError() async throws {
        let delegate = RecordingSessionDelegate()
        let configuration = URLSessionConfiguration.background(withIdentifier: "test.bad-input")
        #expect(configuration.sessionSendsLaunchEvents)
        #expect(!configuration.isDiscretionary)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        let relative = session.downloadTask(with: try #require(URL(string: "episodes/1.mp3")))
        let ftp = session.downloadTask(with: try #require(URL(string: "ftp://example.com/1.mp3")))
        var request = URLRequest(url: try #require(URL(string: "https://example.com/upload")))
        request.httpMethod = "PUT"
        let upload = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: "/nonexistent/outside/file"))
        let identifiers: [Int] = [relative.taskIdentifier, ftp.taskIdentifier, upload.taskIdentifier]
        #expect(identifiers == [1, 2, 3])
        #expect(relative.state == .suspended)
        for task in [relative, ftp, upload] { task.resume() }
        #expect(relative.state == .running)
        // The completions come on the session's queue: wait for them (a condition, not a time).
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while delegate.completions.count < 3, clock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let completed: [Int] = delegate.completions.map(\.0)
        #expect(completed == [1, 2, 3])
        #expect(delegate.completions.map(\.1) == [URLError.unsupportedURL.rawValue, URLError.unsupportedURL.rawValue, URLError.fileDoesNotExist.rawValue])
        #expect(relative.state == .completed)
        #expect((relative.error as? URLError)?.code == .unsupportedURL)
        #expect(await session.allTasks.isEmpty, "ended tasks are not listed")
    }
}
