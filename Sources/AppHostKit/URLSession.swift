public import Foundation
import Synchronization
import AppHostProtocol

// Background URL sessions (README.md, "Background transfers"): Foundation's names for the part of
// URLSession that iOS runs outside the app. On Linux, Foundation has no URLSession (it lives in
// FoundationNetworking, which an app need not import): these types shadow nothing an app uses.
// The host's transfer service carries the transfers out; the app process never opens a socket.

/// A minimal `URLRequest`: the URL, the method and the header fields of a transfer.
public struct URLRequest: Sendable, Hashable {
    public var url: URL?
    /// nil: GET for a download, POST for an upload.
    public var httpMethod: String?
    public var allHTTPHeaderFields: [String: String]?

    public init(url: URL) { self.url = url }

    /// Sets a header field (nil removes it); names compare without case, as HTTP's do.
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        var fields = allHTTPHeaderFields ?? [:]
        for name in fields.keys where name.caseInsensitiveCompare(field) == .orderedSame { fields[name] = nil }
        fields[field] = value
        allHTTPHeaderFields = fields
    }

    /// Adds to a header field, comma-separated after what it holds.
    public mutating func addValue(_ value: String, forHTTPHeaderField field: String) {
        setValue(self.value(forHTTPHeaderField: field).map { "\($0),\(value)" } ?? value, forHTTPHeaderField: field)
    }

    public func value(forHTTPHeaderField field: String) -> String? {
        allHTTPHeaderFields?.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }
}

/// A response's status and URL, as `HTTPURLResponse`.
open class URLResponse: @unchecked Sendable {
    public let url: URL?
    init(url: URL?) { self.url = url }
}

open class HTTPURLResponse: URLResponse, @unchecked Sendable {
    public let statusCode: Int
    init(url: URL?, statusCode: Int) {
        self.statusCode = statusCode
        super.init(url: url)
    }
}

/// A background session's configuration: `URLSessionConfiguration.background(withIdentifier:)`
/// is the only kind (the others are FoundationNetworking's, run in the app).
open class URLSessionConfiguration: @unchecked Sendable {
    /// The identifier that reconnects to the session's transfers after a relaunch.
    public let identifier: String?
    /// Let the host wait for good conditions: the network and external power.
    public var isDiscretionary = false
    /// Launch or resume the app in the background when the session's transfers finish.
    public var sessionSendsLaunchEvents = true

    init(identifier: String) { self.identifier = identifier }

    /// A configuration whose transfers the host carries on while the app is suspended or gone.
    open class func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        URLSessionConfiguration(identifier: identifier)
    }
}

/// One transfer of a background session: a download or an upload.
public class URLSessionTask: @unchecked Sendable {
    public enum State: Int, Sendable {
        case running = 0
        case suspended = 1
        case canceling = 2
        case completed = 3
    }

    /// Unique within its session, and kept across relaunches.
    public let taskIdentifier: Int
    public let originalRequest: URLRequest?
    public var currentRequest: URLRequest? { originalRequest }
    private let mutable: Mutex<Mutable>
    weak var session: URLSession?
    let wire: WireTransfer

    struct Mutable {
        var state: State
        var description: String?
        var response: URLResponse?
        var error: (any Error)?
        var received: Int64 = 0
        var sent: Int64 = 0
        var expected: Int64?
        var earliestBeginDate: Date?
    }

    required init(session: URLSession, wire: WireTransfer, state: State) {
        self.session = session
        self.wire = wire
        taskIdentifier = wire.task
        var request = URL(string: wire.url).map(URLRequest.init(url:))
        request?.httpMethod = wire.method
        request?.allHTTPHeaderFields = wire.headers
        originalRequest = request
        mutable = Mutex(Mutable(state: state, description: wire.taskDescription, earliestBeginDate: wire.earliestBegin.map(Date.init(timeIntervalSince1970:))))
    }

    public var state: State { mutable.withLock { $0.state } }
    public var taskDescription: String? {
        get { mutable.withLock { $0.description } }
        set { mutable.withLock { $0.description = newValue } }
    }
    public var response: URLResponse? { mutable.withLock { $0.response } }
    /// The error the task ended with (a `URLError`); nil while it runs or if it completed.
    public var error: (any Error)? { mutable.withLock { $0.error } }
    public var countOfBytesReceived: Int64 { mutable.withLock { $0.received } }
    public var countOfBytesSent: Int64 { mutable.withLock { $0.sent } }
    /// The response's length, once its head came (`NSURLSessionTransferSizeUnknown`, -1, before).
    public var countOfBytesExpectedToReceive: Int64 { mutable.withLock { $0.expected ?? -1 } }
    /// The transfer does not start before this (set it before `resume()`); nil: at once.
    public var earliestBeginDate: Date? {
        get { mutable.withLock { $0.earliestBeginDate } }
        set { mutable.withLock { $0.earliestBeginDate = newValue } }
    }

    /// Starts the transfer: the host's transfer service carries it out from here, whatever
    /// becomes of the app. Resuming a running task does nothing.
    public func resume() {
        let start = mutable.withLock { value -> Bool in
            guard value.state == .suspended else { return false }
            value.state = .running
            return true
        }
        guard start, let session else { return }
        var wire = wire
        wire.taskDescription = taskDescription
        wire.earliestBegin = earliestBeginDate?.timeIntervalSince1970
        URLSession.registry.start(self, wire, in: session)
    }

    /// Cancels the transfer; the delegate gets `didCompleteWithError` with `URLError(.cancelled)`.
    public func cancel() {
        let cancel = mutable.withLock { value -> Bool in
            guard value.state == .running || value.state == .suspended else { return false }
            value.state = .canceling
            return true
        }
        guard cancel, let session else { return }
        URLSession.registry.cancel(self, in: session)
    }

    /// An upload's body size, for `totalBytesExpectedToSend` (-1 if it cannot be read).
    var bodySize: Int64 {
        guard let path = wire.file else { return -1 }
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : -1
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

    func finish(_ event: WireTransferEvent, error: (any Error)?) {
        mutable.withLock {
            $0.state = .completed
            $0.error = error
            $0.received = event.bytesReceived
            $0.sent = event.bytesSent
            $0.response = event.statusCode.map { HTTPURLResponse(url: URL(string: event.transfer.url), statusCode: $0) }
        }
    }
}

public class URLSessionDataTask: URLSessionTask, @unchecked Sendable {}
/// An upload of a file from the app's container; the response body reaches
/// `urlSession(_:dataTask:didReceive:)`.
public class URLSessionUploadTask: URLSessionDataTask, @unchecked Sendable {}
/// A download to a file the delegate gets in `urlSession(_:downloadTask:didFinishDownloadingTo:)`.
public class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {}

/// A background session: its transfers run in the host. Delegate methods run on the main queue.
open class URLSession: @unchecked Sendable {
    public let configuration: URLSessionConfiguration
    public let delegate: (any URLSessionDelegate)?
    /// Always the main queue: the host delivers on the app's main thread.
    public let delegateQueue: OperationQueue
    let identifier: String

    /// Creates the session, or reconnects to the one with the configuration's identifier: its
    /// transfers, finished while the app was away, reach `delegate` once this returns.
    public init(configuration: URLSessionConfiguration, delegate: (any URLSessionDelegate)?, delegateQueue queue: OperationQueue?) {
        self.configuration = configuration
        self.delegate = delegate
        delegateQueue = OperationQueue.main
        identifier = configuration.identifier ?? ""
        Self.registry.attach(self)
    }

    /// A download of `url` (absolute, http or https), suspended until `resume()`.
    open func downloadTask(with url: URL) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url))
    }

    open func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        Self.registry.make(URLSessionDownloadTask.self, kind: .download, request: request, file: nil, in: self)
    }

    /// An upload of `fileURL` (a file in the app's container) to `request`, suspended until `resume()`.
    open func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        Self.registry.make(URLSessionUploadTask.self, kind: .upload, request: request, file: fileURL, in: self)
    }

    /// The session's tasks that have not completed, those made before a relaunch included.
    /// `completionHandler` runs on the main queue.
    open func getAllTasks(completionHandler: @escaping @MainActor @Sendable ([URLSessionTask]) -> Void) {
        let tasks = Self.registry.tasks(of: self)
        DispatchQueue.main.async { MainActor.assumeIsolated { completionHandler(tasks) } }
    }

    open var allTasks: [URLSessionTask] {
        get async { Self.registry.tasks(of: self) }
    }

    /// Cancels every task of the session.
    open func invalidateAndCancel() {
        Self.registry.tasks(of: self).forEach { $0.cancel() }
    }

    static var registry: URLSessionRegistry { urlSessionRegistry }
}

/// What every session delegate may implement. The host delivers on the main queue, so the
/// delegate protocols are main-actor isolated (Foundation's run on the session's delegate queue).
@MainActor
public protocol URLSessionDelegate: AnyObject {
    /// The events of `application(_:handleEventsForBackgroundURLSession:completionHandler:)` were
    /// all delivered: call the completion handler it gave (on the main queue).
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)
}

@MainActor
public protocol URLSessionTaskDelegate: URLSessionDelegate {
    /// The task ended: `error` is nil if it completed (a `URLError` otherwise).
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?)
    /// An upload sent more of its body (while the app runs; at most four times a second).
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
}

@MainActor
public protocol URLSessionDataDelegate: URLSessionTaskDelegate {
    /// An upload's response body.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data)
}

@MainActor
public protocol URLSessionDownloadDelegate: URLSessionTaskDelegate {
    /// The download is in `location`, a temporary file that is removed when this returns: move
    /// it into the container before returning.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL)
    /// The download received more (while the app runs; at most four times a second).
    /// `totalBytesExpectedToWrite` is -1 where the server did not say.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64)
}

extension URLSessionDelegate {
    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}

extension URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {}
    public func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
}

extension URLSessionDownloadDelegate {
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {}
}

extension URLSessionDataDelegate {
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {}
}

extension URLError {
    /// Why the system cancelled a background transfer: the value of
    /// `NSURLErrorBackgroundTaskCancelledReasonKey` in the error's `userInfo`, as Apple names it.
    public enum BackgroundTaskCancelledReason: Int, Sendable {
        case userForceQuitApplication = 0
        case backgroundUpdatesDisabled = 1
        case insufficientSystemResources = 2
    }

    /// Why the system cancelled the transfer, if it did (a force quit of the app, say).
    public var backgroundTaskCancelledReason: BackgroundTaskCancelledReason? {
        (userInfo[NSURLErrorBackgroundTaskCancelledReasonKey] as? Int).flatMap(BackgroundTaskCancelledReason.init(rawValue:))
    }
}
