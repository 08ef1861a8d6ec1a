public import Foundation
public import FoundationNetworking
import Synchronization
import AppHostProtocol

// A background session's tasks: FoundationNetworking's `URLSessionDownloadTask` and
// `URLSessionUploadTask`, so that an app's delegate gets the types it names, whose state is the
// host's transfer's. The two classes derive from different FoundationNetworking classes, so each
// states its overrides; both hand them to one `BackgroundTaskCore`.

/// What a background task knows of its transfer, shared by the download and upload classes.
final class BackgroundTaskCore: Sendable {
    let taskIdentifier: Int
    let originalRequest: URLRequest?
    let wire: WireTransfer
    private let mutable: Mutex<Mutable>
    private let sessionBox: Mutex<WeakSession>

    struct WeakSession: @unchecked Sendable { weak var session: URLSession? }

    struct Mutable {
        var state: URLSessionTask.State
        var response: URLResponse?
        var error: (any Error)?
        var received: Int64 = 0
        var sent: Int64 = 0
        var expected: Int64?
        /// `cancel(byProducingResumeData:)`'s handler, until the host says how the task ended.
        var resumeDataHandler: (@Sendable (Data?) -> Void)?
    }

    init(session: URLSession, wire: WireTransfer, state: URLSessionTask.State) {
        self.wire = wire
        taskIdentifier = wire.task
        var request = URL(string: wire.url).map { URLRequest(url: $0) }
        request?.httpMethod = wire.method ?? (wire.kind == .download ? "GET" : "POST")
        request?.allHTTPHeaderFields = wire.headers
        originalRequest = request
        mutable = Mutex(Mutable(state: state))
        sessionBox = Mutex(WeakSession(session: session))
    }

    var session: URLSession? { sessionBox.withLock { $0.session } }
    var state: URLSessionTask.State { mutable.withLock { $0.state } }
    var response: URLResponse? { mutable.withLock { $0.response } }
    var error: (any Error)? { mutable.withLock { $0.error } }
    var received: Int64 { mutable.withLock { $0.received } }
    var sent: Int64 { mutable.withLock { $0.sent } }
    /// The response's length, once its head came (`NSURLSessionTransferSizeUnknown`, -1, before).
    var expected: Int64 { mutable.withLock { $0.expected ?? NSURLSessionTransferSizeUnknown } }

    /// An upload's body size, for `totalBytesExpectedToSend` (-1 if it cannot be read).
    var bodySize: Int64 {
        guard let path = wire.file else { return -1 }
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : -1
    }

    /// `resume()`: starts the transfer once; the host carries it out from here, whatever becomes of the app.
    func resume(_ task: URLSessionTask) {
        let start = mutable.withLock { value -> Bool in
            guard value.state == .suspended else { return false }
            value.state = .running
            return true
        }
        guard start, let session else { return }
        var wire = wire
        wire.taskDescription = task.taskDescription
        wire.earliestBegin = task.earliestBeginDate?.timeIntervalSince1970
        URLSession.registry.start(wire, in: session)
    }

    /// `cancel()`: the delegate gets `didCompleteWithError` with `URLError(.cancelled)`; with a
    /// handler, the host keeps the part file and the handler gets the resume data (or nil).
    func cancel(producingResumeData handler: (@Sendable (Data?) -> Void)? = nil) {
        let cancel = mutable.withLock { value -> Bool in
            guard value.state == .running || value.state == .suspended else { return false }
            value.state = .canceling
            value.resumeDataHandler = handler
            return true
        }
        guard cancel, let session else {
            handler?(nil)
            return
        }
        URLSession.registry.cancel(self, producingResumeData: handler != nil, in: session)
    }

    /// Records progress; returns the bytes received and sent since the last.
    func moved(received: Int64, sent: Int64, expected: Int64?) -> (received: Int64, sent: Int64) {
        mutable.withLock { value in
            let moved = (received - value.received, sent - value.sent)
            value.received = received
            value.sent = sent
            value.expected = expected ?? value.expected
            return moved
        }
    }

    /// The task ended; returns the handler of `cancel(byProducingResumeData:)`, if one waits.
    func finish(_ event: WireTransferEvent, error: (any Error)?) -> (@Sendable (Data?) -> Void)? {
        let response = event.statusCode.flatMap { status in
            URL(string: event.transfer.url).flatMap { HTTPURLResponse(url: $0, statusCode: status, httpVersion: "HTTP/1.1", headerFields: event.headers ?? [:]) }
        }
        return mutable.withLock { value in
            value.state = .completed
            value.error = error
            value.received = event.bytesReceived
            value.sent = event.bytesSent
            value.expected = event.bytesExpected ?? value.expected
            value.response = response
            defer { value.resumeDataHandler = nil }
            return value.resumeDataHandler
        }
    }
}

/// A task of a background session: its core, whichever FoundationNetworking class it is.
protocol BackgroundTask: URLSessionTask {
    var core: BackgroundTaskCore { get }
    init(core: BackgroundTaskCore)
}

extension BackgroundTask {
    init(session: URLSession, wire: WireTransfer, state: URLSessionTask.State) {
        self.init(core: BackgroundTaskCore(session: session, wire: wire, state: state))
    }
}

/// A background download, to a file the delegate gets in `urlSession(_:downloadTask:didFinishDownloadingTo:)`.
final class BackgroundDownloadTask: URLSessionDownloadTask, BackgroundTask, @unchecked Sendable {
    let core: BackgroundTaskCore
    init(core: BackgroundTaskCore) {
        self.core = core
        super.init()
    }
    override var taskIdentifier: Int { core.taskIdentifier }
    override var originalRequest: URLRequest? { core.originalRequest }
    override var currentRequest: URLRequest? { core.originalRequest }
    override var response: URLResponse? { core.response }
    override var error: (any Error)? { core.error }
    override var state: URLSessionTask.State { core.state }
    override var countOfBytesReceived: Int64 { core.received }
    override var countOfBytesSent: Int64 { core.sent }
    override var countOfBytesExpectedToReceive: Int64 { core.expected }
    override var countOfBytesExpectedToSend: Int64 { 0 }
    override func resume() { core.resume(self) }
    override func cancel() { core.cancel() }
    /// The host carries the transfer on; a background task is not suspended.
    override func suspend() {}
    /// Cancels the download; the host keeps what it has, and `completionHandler` gets the data
    /// that `downloadTask(withResumeData:)` goes on from (nil where the download cannot resume).
    override func cancel(byProducingResumeData completionHandler: @escaping (Data?) -> Void) {
        // Called once, on the delegate queue, as FoundationNetworking calls it.
        nonisolated(unsafe) let handler = completionHandler
        core.cancel { handler($0) }
    }
}

/// A background upload of a file in the app's container; the response body reaches
/// `urlSession(_:dataTask:didReceive:)`.
final class BackgroundUploadTask: URLSessionUploadTask, BackgroundTask, @unchecked Sendable {
    let core: BackgroundTaskCore
    init(core: BackgroundTaskCore) {
        self.core = core
        super.init()
    }
    override var taskIdentifier: Int { core.taskIdentifier }
    override var originalRequest: URLRequest? { core.originalRequest }
    override var currentRequest: URLRequest? { core.originalRequest }
    override var response: URLResponse? { core.response }
    override var error: (any Error)? { core.error }
    override var state: URLSessionTask.State { core.state }
    override var countOfBytesReceived: Int64 { core.received }
    override var countOfBytesSent: Int64 { core.sent }
    override var countOfBytesExpectedToReceive: Int64 { core.expected }
    override var countOfBytesExpectedToSend: Int64 { core.bodySize }
    override func resume() { core.resume(self) }
    override func cancel() { core.cancel() }
    /// The host carries the transfer on; a background task is not suspended.
    override func suspend() {}
}
