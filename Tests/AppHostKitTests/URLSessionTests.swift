import Foundation
import Testing
import UIKit
import Synchronization
@testable import AppHostKit

/// A session delegate written as on iOS, through `import UIKit` (which brings URLSession, from
/// AppHostKit, and FoundationNetworking's other names): an NSObject, Sendable, its methods
/// called on the session's delegate queue.
final class RecordingSessionDelegate: NSObject, URLSessionDownloadDelegate, Sendable {
    struct Completion: Sendable {
        var task: Int
        var code: Int?
        var mainThread: Bool
        var queue: OperationQueue?
    }

    let completions = Mutex<[Completion]>([])
    /// One element for each completion, after it is recorded: what `wait(for:)` wakes on.
    private let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    override init() {
        (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        super.init()
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {}

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let completion = Completion(
            task: task.taskIdentifier, code: (error as? URLError)?.code.rawValue, mainThread: Thread.isMainThread, queue: OperationQueue.current)
        completions.withLock { $0.append(completion) }
        arrived.yield()
    }

    /// Waits for `count` completions, woken by each (a condition, not a time), and returns those
    /// recorded. A wait for one that never comes ends when the test's time limit cancels it,
    /// with fewer. One waiter at a time.
    func wait(for count: Int) async -> [Completion] {
        if completions.withLock({ $0.count }) < count {
            for await _ in arrivals where completions.withLock({ $0.count }) >= count { break }
        }
        return completions.withLock { $0 }
    }
}

/// The SDK's background sessions outside a host: tasks are numbered per session, and bad input
/// ends a task at once with Foundation's error, before anything reaches the host.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct URLSessionTests {
    @Test func badURLsAndUploadFilesOutsideTheContainerEndTheTaskWithAnError() async throws {
        let delegate = RecordingSessionDelegate()
        let configuration = URLSessionConfiguration.background(withIdentifier: "test.bad-input")
        #expect(configuration.sessionSendsLaunchEvents)
        #expect(!configuration.isDiscretionary)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        #expect(session.configuration.identifier == "test.bad-input")
        let relative = session.downloadTask(with: try #require(URL(string: "episodes/1.mp3")))
        let ftp = session.downloadTask(with: try #require(URL(string: "ftp://example.com/1.mp3")))
        var request = URLRequest(url: try #require(URL(string: "https://example.com/upload")))
        request.httpMethod = "PUT"
        let upload = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: "/nonexistent/outside/file"))
        let identifiers: [Int] = [relative.taskIdentifier, ftp.taskIdentifier, upload.taskIdentifier]
        #expect(identifiers == [1, 2, 3])
        #expect(relative.state == .suspended)
        for task in [relative, ftp, upload] { task.resume() }
        let completions = await delegate.wait(for: 3)
        #expect(completions.map(\.task) == [1, 2, 3])
        #expect(completions.map(\.code) == [URLError.unsupportedURL.rawValue, URLError.unsupportedURL.rawValue, URLError.fileDoesNotExist.rawValue])
        #expect(relative.state == .completed)
        #expect((relative.error as? URLError)?.code == .unsupportedURL)
        #expect(await session.allTasks.isEmpty, "ended tasks are not listed")
    }

    /// As on iOS: `delegateQueue: nil` is a serial queue of the session's own, not the main
    /// queue (a delegate that calls `DispatchQueue.main.sync` works); a queue given is used.
    @Test func aSessionsDelegateRunsOnItsDelegateQueue() async throws {
        let own = RecordingSessionDelegate()
        let session = URLSession(configuration: .background(withIdentifier: "test.own-queue"), delegate: own, delegateQueue: nil)
        #expect(session.delegateQueue !== OperationQueue.main)
        #expect(session.delegateQueue.maxConcurrentOperationCount == 1)
        session.downloadTask(with: try #require(URL(string: "relative"))).resume()
        let completion = try #require(await own.wait(for: 1).first)
        #expect(!completion.mainThread)
        #expect(completion.queue === session.delegateQueue)

        let given = OperationQueue()
        let other = RecordingSessionDelegate()
        let second = URLSession(configuration: .background(withIdentifier: "test.given-queue"), delegate: other, delegateQueue: given)
        #expect(second.delegateQueue === given)
        second.downloadTask(with: try #require(URL(string: "relative"))).resume()
        #expect(await other.wait(for: 1).first?.queue === given)
    }

    /// One URLSession does both, as on iOS: an ordinary session is FoundationNetworking's, in
    /// this process, and `URLSession.shared` is one of AppHostKit's sessions.
    @Test func ordinarySessionsAreFoundationNetworkings() throws {
        let shared: URLSession = URLSession.shared
        #expect(shared.configuration.identifier == nil)
        let session = URLSession(configuration: .default)
        #expect(session.background == nil)
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:9/")))
        request.setValue("1", forHTTPHeaderField: "X-Test")
        #expect(request.value(forHTTPHeaderField: "x-test") == "1")
        #expect(!(session.dataTask(with: request) is any BackgroundTask))
    }
}

/// Exactly once across a host's death (docs/storage.md, "What survives the host"): the transfers an app
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
