import Foundation
import Testing
import UIKit
@testable import AppHostKit

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

/// Exactly once across a host's death (README.md, "What survives the host"): the transfers an app
/// was handed are kept in its container, so the next process of the app, handed one again by the
/// next host, knows it. Regression (found by scripts/chaos): a download delivered, the host
/// killed before it heard so, reached the app's delegate a second time, with an error.
@Suite struct DeliveredTransfersTests {
    @Test func aTransferHandedToTheAppIsKnownToItsNextProcess() throws {
        let container = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-delivered-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: container.appendingPathComponent("Library"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: container) }
        let first = DeliveredTransfers(container: { container })
        #expect(!first.contains("a"))
        first.insert("a")
        first.insert("b")
        #expect(first.contains("a") && first.contains("b"))
        // The app's next process, after the host and the app were killed.
        let next = DeliveredTransfers(container: { container })
        #expect(next.contains("a") && next.contains("b") && !next.contains("c"))
        // Bounded: the oldest go first.
        for index in 0..<600 { next.insert("id\(index)") }
        let later = DeliveredTransfers(container: { container })
        #expect(!later.contains("a") && later.contains("id599") && later.contains("id88") && !later.contains("id87"))
    }
}
