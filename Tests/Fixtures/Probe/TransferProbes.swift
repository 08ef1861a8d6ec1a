import AppHostKit
import Foundation
import Synchronization

// What the Probe does with background URL sessions, from ProbeBehavior:
//   "transfers": [{"kind": "download" | "upload", "url": URL, "file": PATH, "discretionary": true,
//                  "headers": {NAME: VALUE}, "beginIn": SECONDS}]
//                                  made and resumed in didFinishLaunching of its first launch (an
//                                  upload's PATH is relative to the container unless absolute;
//                                  beginIn sets earliestBeginDate that far from now)
//   "uploadBytes": N               the size of Documents/upload.bin, written before the uploads
//   "urlSessionCompletion": "never"   never call handleEvents' completion handler
//   "challengeAnswer": {"disposition": "useCredential" | "trust" | "performDefaultHandling" | "cancel" | "reject",
//                       "user": U, "password": P, "persistence": "permanent" | "forSession"}
//                                  the answer to urlSession(_:task:didReceive:completionHandler:),
//                                  and to the session's for a server's certificate ("trust":
//                                  URLCredential(trust:)) (default: performDefaultHandling)
//   "cancelForResumeAt": N         once a download has N bytes, cancel(byProducingResumeData:) and
//                                  go on from the resume data with downloadTask(withResumeData:)
//   "urlSessionQueue": "own"        make the session with delegateQueue nil (a serial queue of
//                                  its own, as on iOS): the delegate records through
//                                  DispatchQueue.main.sync, which deadlocks on the main queue;
//                                  else the session's delegate queue is OperationQueue.main
// The session (com.example.probe.transfers) is made again at every launch. The delegate moves each
// download to Documents/download-TASK and records every callback with what it got.
final class TransferProbe: NSObject, URLSessionDownloadDelegate, URLSessionDataDelegate, Sendable {
    static let sessionIdentifier = "com.example.probe.transfers"
    let record: @Sendable (String) -> Void
    let completeEvents: Bool
    let completionHandler = Mutex<(@Sendable () -> Void)?>(nil)
    let challengeAnswer: [String: String]
    let cancelForResumeAt: Int64?
    /// Whether a download was cancelled for its resume data (once: not the one that goes on from it).
    let cancelled = Mutex(false)
    /// Whether each completion records its response's header fields too.
    let recordsHeaders: Bool

    init(
        record: @escaping @Sendable (String) -> Void, completeEvents: Bool, challengeAnswer: [String: String] = [:], cancelForResumeAt: Int64? = nil,
        recordsHeaders: Bool = false
    ) {
        self.recordsHeaders = recordsHeaders
        self.record = record
        self.completeEvents = completeEvents
        self.challengeAnswer = challengeAnswer
        self.cancelForResumeAt = cancelForResumeAt
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        let method = space.authenticationMethod == NSURLAuthenticationMethodHTTPDigest ? "Digest" : "Basic"
        record("didReceiveChallenge task=\(task.taskIdentifier) method=\(method) realm=\(space.realm ?? "nil") host=\(space.host):\(space.port) failures=\(challenge.previousFailureCount)")
        let persistence: URLCredential.Persistence = challengeAnswer["persistence"] == "permanent" ? .permanent : .forSession
        switch challengeAnswer["disposition"] {
        case "useCredential":
            completionHandler(.useCredential, URLCredential(user: challengeAnswer["user"] ?? "", password: challengeAnswer["password"] ?? "", persistence: persistence))
        case "cancel": completionHandler(.cancelAuthenticationChallenge, nil)
        case "reject": completionHandler(.rejectProtectionSpace, nil)
        default: completionHandler(.performDefaultHandling, nil)
        }
    }

    /// A server's certificate the system does not trust (the session delegate's, as on iOS):
    /// "trust" answers with `URLCredential(trust:)`, the others as for a 401.
    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        guard space.authenticationMethod == NSURLAuthenticationMethodServerTrust, let trust = space.serverTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        let certificate = SecTrustCopyCertificateChain(trust)?.first
        record("didReceiveSessionChallenge method=ServerTrust host=\(space.host):\(space.port) subject=\(certificate.flatMap(SecCertificateCopySubjectSummary) ?? "nil") der=\(certificate.map { SecCertificateCopyData($0).first == 0x30 } ?? false)")
        switch challengeAnswer["disposition"] {
        case "trust": completionHandler(.useCredential, URLCredential(trust: trust))
        case "cancel": completionHandler(.cancelAuthenticationChallenge, nil)
        case "reject": completionHandler(.rejectProtectionSpace, nil)
        default: completionHandler(.performDefaultHandling, nil)
        }
    }

    /// `cancelForResumeAt`: the download cancelled for its resume data, and a new one made from it.
    private func cancelForResume(_ session: URLSession, _ task: URLSessionDownloadTask, at bytes: Int64) {
        guard let limit = cancelForResumeAt, bytes >= limit else { return }
        let first = cancelled.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let record = record
        task.cancel { data in
            record("resumeData task=\(task.taskIdentifier) \(data.map { "bytes=\($0.count)" } ?? "nil")")
            guard let data else { return }
            let next = session.downloadTask(withResumeData: data)
            next.resume()
            record("resumed task=\(next.taskIdentifier) fromResumeData")
        }
    }

    /// Runs `body` on the main thread: at once on the main queue, else with
    /// `DispatchQueue.main.sync` (which traps where the caller is on the main queue).
    static func onMain<Value: Sendable>(_ body: @MainActor () -> Value) -> Value {
        Thread.isMainThread ? MainActor.assumeIsolated(body) : DispatchQueue.main.sync { MainActor.assumeIsolated(body) }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let destination = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0].deletingLastPathComponent().appendingPathComponent("Documents/download-\(downloadTask.taskIdentifier)")
        try? FileManager.default.removeItem(at: destination)
        let moved = (try? FileManager.default.moveItem(at: location, to: destination)) != nil
        // stat, not attributesOfItem: that looks up the owner's name, through nscd's socket,
        // which the sandbox refuses.
        var info = stat()
        let size = stat(destination.path, &info) == 0 ? Int(info.st_size) : -1
        let state = Self.onMain { Application.shared.applicationState }
        record("didFinishDownloading task=\(downloadTask.taskIdentifier) moved=\(moved) bytes=\(size) tmp=\(location.path.contains("/tmp/")) state=\(state)")
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        let state = Self.onMain { Application.shared.applicationState }
        cancelForResume(session, downloadTask, at: totalBytesWritten)
        record("didWriteData task=\(downloadTask.taskIdentifier) written=\(bytesWritten) total=\(totalBytesWritten) expected=\(totalBytesExpectedToWrite) received=\(downloadTask.countOfBytesReceived) expectedToReceive=\(downloadTask.countOfBytesExpectedToReceive) state=\(state)")
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        record("didResumeAtOffset task=\(downloadTask.taskIdentifier) offset=\(fileOffset) expected=\(expectedTotalBytes) received=\(downloadTask.countOfBytesReceived)")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        record("didSendBodyData task=\(task.taskIdentifier) sent=\(bytesSent) total=\(totalBytesSent) expected=\(totalBytesExpectedToSend) countOfBytesSent=\(task.countOfBytesSent)")
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        record("didReceive task=\(dataTask.taskIdentifier) \(String(decoding: data, as: UTF8.self))")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let status = (task.response as? HTTPURLResponse)?.statusCode
        let code = (error as? URLError)?.code.rawValue
        let reason = ((error as? URLError)?.backgroundTaskCancelledReason).map { " reason=\($0)" } ?? ""
        let resume = (error as? URLError)?.downloadTaskResumeData.map { " resumeData=\($0.isEmpty ? "empty" : "yes")" } ?? ""
        record("didComplete task=\(task.taskIdentifier) error=\(code.map(String.init) ?? "nil") status=\(status.map(String.init) ?? "nil") sent=\(task.countOfBytesSent)\(reason)\(resume)")
        if recordsHeaders, let response = task.response as? HTTPURLResponse {
            let fields = response.allHeaderFields.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            record("headers task=\(task.taskIdentifier) \(fields) etag=\(response.value(forHTTPHeaderField: "etag") ?? "none")")
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        record("didFinishEvents \(session.configuration.identifier ?? "?") main=\(Thread.isMainThread)")
        guard completeEvents, let handler = completionHandler.withLock({ handler in defer { handler = nil }; return handler }) else { return }
        // As UIKit asks: the completion handler on the main queue.
        DispatchQueue.main.async {
            handler()
            self.record("completed events")
        }
    }
}

extension AppDelegate {
    /// Makes the session (again), and on the first launch the tasks the behaviour lists.
    func transferSetup(_ application: Application) -> TransferProbe? {
        let transfers = behavior["transfers"] as? [[String: Any]]
        guard transfers != nil || behavior["urlSession"] as? Bool == true else { return nil }
        let completeEvents = behavior["urlSessionCompletion"] as? String != "never"
        let answer = behavior["challengeAnswer"] as? [String: String] ?? [:]
        let cancelAt = (behavior["cancelForResumeAt"] as? Int).map(Int64.init)
        let probe = TransferProbe(
            record: { [weak self] line in TransferProbe.onMain { self?.record(line) } }, completeEvents: completeEvents,
            challengeAnswer: answer, cancelForResumeAt: cancelAt, recordsHeaders: behavior["recordHeaders"] as? Bool == true)
        let configuration = URLSessionConfiguration.background(withIdentifier: TransferProbe.sessionIdentifier)
        configuration.isDiscretionary = (transfers ?? []).contains { $0["discretionary"] as? Bool == true }
        let session = URLSession(configuration: configuration, delegate: probe, delegateQueue: behavior["urlSessionQueue"] as? String == "own" ? nil : .main)
        let marker = application.containerURL.appendingPathComponent("Documents/transfers-made")
        if FileManager.default.fileExists(atPath: marker.path) {
            session.getAllTasks { tasks in
                probe.record("getAllTasks \(tasks.map { "\($0.taskIdentifier)" }.joined(separator: ","))")
            }
            return probe
        }
        try? Data().write(to: marker)
        if let size = behavior["uploadBytes"] as? Int {
            try? Data(repeating: 0x61, count: size).write(to: application.containerURL.appendingPathComponent("Documents/upload.bin"))
        }
        for entry in transfers ?? [] {
            let url = URL(string: entry["url"] as? String ?? "") ?? URL(fileURLWithPath: entry["url"] as? String ?? "relative")
            let task: URLSessionTask
            if entry["kind"] as? String == "upload" {
                let path = entry["file"] as? String ?? "Documents/upload.bin"
                let file = path.hasPrefix("/") ? URL(fileURLWithPath: path) : application.containerURL.appendingPathComponent(path)
                var request = URLRequest(url: url)
                request.httpMethod = "PUT"
                for (name, value) in entry["headers"] as? [String: String] ?? [:] { request.setValue(value, forHTTPHeaderField: name) }
                task = session.uploadTask(with: request, fromFile: file)
            } else {
                var request = URLRequest(url: url)
                for (name, value) in entry["headers"] as? [String: String] ?? [:] { request.setValue(value, forHTTPHeaderField: name) }
                task = session.downloadTask(with: request)
            }
            if let seconds = entry["beginIn"] as? Double { task.earliestBeginDate = Date().addingTimeInterval(seconds) }
            task.resume()
            record("resumed task=\(task.taskIdentifier) \(entry["kind"] as? String ?? "download")")
        }
        return probe
    }

    func application(
        _ application: Application, handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        record("handleEvents \(identifier) \(application.applicationState) main=\(Thread.isMainThread)")
        transferProbe?.completionHandler.withLock { $0 = completionHandler }
    }
}
