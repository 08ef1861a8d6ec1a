@_exported public import FoundationNetworking
public import Foundation
import AppHostProtocol

// URLSession as iOS has it (docs/transfers.md, "Background transfers"): one class for both kinds of
// session. An ordinary one (`.default`, `.ephemeral`, `URLSession.shared`) is
// FoundationNetworking's, run in the app process on its own sockets (the network entitlement
// lets it make them). A background one (`.background(withIdentifier:)`, which
// FoundationNetworking does not have) hands its downloads and uploads to the host, which carries
// them out whatever becomes of the app; the app process never opens a socket for them.
// AppHostKit's `URLSession` is a subclass of FoundationNetworking's that shadows its name: an app
// (through `import UIKit` or `import AppHostKit`, which re-export FoundationNetworking) names
// only this one, and every other name (URLRequest, the tasks, the responses, the credentials) is
// FoundationNetworking's.

/// The configuration of a background session: FoundationNetworking's, with what only a
/// background session has.
final class BackgroundSessionConfiguration: URLSessionConfiguration, @unchecked Sendable {
    var launchEvents = true
}

extension URLSessionConfiguration {
    /// A configuration whose transfers the host carries on while the app is suspended or gone.
    public class func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        let configuration = BackgroundSessionConfiguration()
        configuration.identifier = identifier
        return configuration
    }

    /// Launch or resume the app in the background when the session's transfers finish (a
    /// background configuration's; true by default).
    public var sessionSendsLaunchEvents: Bool {
        get { (self as? BackgroundSessionConfiguration)?.launchEvents ?? false }
        set { (self as? BackgroundSessionConfiguration)?.launchEvents = newValue }
    }
}

/// A session. Its delegate's methods run on `delegateQueue`: the queue given, or (nil) a serial
/// operation queue of the session's own, as on iOS, never the main queue unless given it.
open class URLSession: FoundationNetworking.URLSession, @unchecked Sendable {
    /// A background session's identifier and configuration; nil for an ordinary session.
    let background: (identifier: String, configuration: URLSessionConfiguration)?

    /// Creates the session. A background one (a configuration with an identifier) reconnects to
    /// the transfers the host carries on for it: those finished while the app was away reach
    /// `delegate` once this returns.
    public init(configuration: URLSessionConfiguration, delegate: (any URLSessionDelegate)?, delegateQueue queue: OperationQueue?) {
        background = configuration.identifier.map { ($0, configuration) }
        super.init(configuration: configuration, delegate: delegate, delegateQueue: queue)
        if background != nil { Self.registry.attach(self) }
    }

    public override convenience init(configuration: URLSessionConfiguration) {
        self.init(configuration: configuration, delegate: nil, delegateQueue: nil)
    }

    private static let sharedSession: URLSession = {
        let configuration = URLSessionConfiguration.default
        configuration.httpCookieStorage = HTTPCookieStorage.shared
        return URLSession(configuration: configuration)
    }()

    /// The shared ordinary session, as FoundationNetworking's.
    open override class var shared: URLSession { sharedSession }

    /// A background session's configuration as made (its identifier and launch events kept).
    open override var configuration: URLSessionConfiguration { background?.configuration ?? super.configuration }

    var identifier: String { background?.identifier ?? "" }

    // MARK: Tasks

    open override func downloadTask(with url: URL) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url))
    }

    /// A background session's download of `request.url` (absolute, http or https), suspended until `resume()`.
    open override func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        guard background != nil else { return super.downloadTask(with: request) }
        return Self.registry.make(BackgroundDownloadTask.self, kind: .download, request: request, file: nil, in: self)
    }

    /// A background session's upload of `fileURL` (a file in the app's container), suspended until `resume()`.
    open override func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        guard background != nil else { return super.uploadTask(with: request, fromFile: fileURL) }
        return Self.registry.make(BackgroundUploadTask.self, kind: .upload, request: request, file: fileURL, in: self)
    }

    /// A download that goes on from where `cancel(byProducingResumeData:)` or a failure left it
    /// (a background session's: the host kept the part file; the server gets a Range request).
    open override func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        guard background != nil else { return super.downloadTask(withResumeData: resumeData) }
        return Self.registry.make(resumingFrom: resumeData, in: self)
    }

    // MARK: The session's tasks

    /// A background session's tasks that have not completed, those made before a relaunch
    /// included; `completionHandler` runs on the delegate queue.
    open override func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        guard background != nil else { return super.getAllTasks(completionHandler: completionHandler) }
        let tasks = Self.registry.tasks(of: self)
        delegateQueue.addOperation { completionHandler(tasks) }
    }

    open override func getTasksWithCompletionHandler(
        _ completionHandler: @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) -> Void
    ) {
        guard background != nil else { return super.getTasksWithCompletionHandler(completionHandler) }
        let tasks = Self.registry.tasks(of: self)
        delegateQueue.addOperation {
            completionHandler([], tasks.compactMap { $0 as? URLSessionUploadTask }, tasks.compactMap { $0 as? URLSessionDownloadTask })
        }
    }

    /// The tasks that have not completed.
    open var allTasks: [URLSessionTask] {
        get async {
            guard background == nil else { return Self.registry.tasks(of: self) }
            return await withCheckedContinuation { continuation in getAllTasks { continuation.resume(returning: $0) } }
        }
    }

    /// Cancels every task of the session (a background session's too).
    open override func invalidateAndCancel() {
        guard background != nil else { return super.invalidateAndCancel() }
        Self.registry.tasks(of: self).forEach { $0.cancel() }
    }

    static var registry: URLSessionRegistry { urlSessionRegistry }
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

    /// The data to resume a failed background download with (`downloadTask(withResumeData:)`),
    /// where the host kept what it had: `userInfo[NSURLSessionDownloadTaskResumeData]`.
    public var downloadTaskResumeData: Data? { userInfo[URLSessionDownloadTaskResumeData] as? Data }
}
