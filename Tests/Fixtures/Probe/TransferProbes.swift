import AppHostKit
import Foundation

// What the Probe does with background URL sessions, from ProbeBehavior:
//   "transfers": [{"kind": "download" | "upload", "url": URL, "file": PATH, "discretionary": true,
//                  "headers": {NAME: VALUE}, "beginIn": SECONDS}]
//                                  made and resumed in didFinishLaunching of its first launch (an
//                                  upload's PATH is relative to the container unless absolute;
//                                  beginIn sets earliestBeginDate that far from now)
//   "uploadBytes": N               the size of Documents/upload.bin, written before the uploads
//   "urlSessionCompletion": "never"   never call handleEvents' completion handler
// The session (com.example.probe.transfers) is made again at every launch. The delegate moves each
// download to Documents/download-TASK and records every callback with what it got.
final class TransferProbe: URLSessionDownloadDelegate, URLSessionDataDelegate {
    static let sessionIdentifier = "com.example.probe.transfers"
    let record: (String) -> Void
    let completeEvents: Bool
    var completionHandler: (@Sendable () -> Void)?
    var session: URLSession?

    init(record: @escaping (String) -> Void, completeEvents: Bool) {
        self.record = record
        self.completeEvents = completeEvents
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let destination = Application.shared.containerURL.appendingPathComponent("Documents/download-\(downloadTask.taskIdentifier)")
        try? FileManager.default.removeItem(at: destination)
        let moved = (try? FileManager.default.moveItem(at: location, to: destination)) != nil
        // stat, not attributesOfItem: that looks up the owner's name, through nscd's socket,
        // which the sandbox refuses.
        var info = stat()
        let size = stat(destination.path, &info) == 0 ? Int(info.st_size) : -1
        record("didFinishDownloading task=\(downloadTask.taskIdentifier) moved=\(moved) bytes=\(size) tmp=\(location.path.contains("/tmp/")) state=\(Application.shared.applicationState)")
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        record("didWriteData task=\(downloadTask.taskIdentifier) written=\(bytesWritten) total=\(totalBytesWritten) expected=\(totalBytesExpectedToWrite) state=\(Application.shared.applicationState)")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        record("didSendBodyData task=\(task.taskIdentifier) sent=\(bytesSent) total=\(totalBytesSent) expected=\(totalBytesExpectedToSend)")
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        record("didReceive task=\(dataTask.taskIdentifier) \(String(decoding: data, as: UTF8.self))")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let status = (task.response as? HTTPURLResponse)?.statusCode
        let code = (error as? URLError)?.code.rawValue
        let reason = ((error as? URLError)?.backgroundTaskCancelledReason).map { " reason=\($0)" } ?? ""
        record("didComplete task=\(task.taskIdentifier) error=\(code.map(String.init) ?? "nil") status=\(status.map(String.init) ?? "nil") sent=\(task.countOfBytesSent)\(reason)")
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        record("didFinishEvents \(session.configuration.identifier ?? "?") main=\(Thread.isMainThread)")
        guard completeEvents, let handler = completionHandler else { return }
        completionHandler = nil
        DispatchQueue.main.async {
            MainActor.assumeIsolated {
                handler()
                self.record("completed events")
            }
        }
    }
}

extension AppDelegate {
    /// Makes the session (again), and on the first launch the tasks the behaviour lists.
    func transferSetup(_ application: Application) -> TransferProbe? {
        let transfers = behavior["transfers"] as? [[String: Any]]
        guard transfers != nil || behavior["urlSession"] as? Bool == true else { return nil }
        let probe = TransferProbe(record: { [weak self] in self?.record($0) }, completeEvents: behavior["urlSessionCompletion"] as? String != "never")
        let configuration = URLSessionConfiguration.background(withIdentifier: TransferProbe.sessionIdentifier)
        configuration.isDiscretionary = (transfers ?? []).contains { $0["discretionary"] as? Bool == true }
        let session = URLSession(configuration: configuration, delegate: probe, delegateQueue: nil)
        probe.session = session
        let marker = application.containerURL.appendingPathComponent("Documents/transfers-made")
        if FileManager.default.fileExists(atPath: marker.path) {
            session.getAllTasks { [weak self] tasks in
                self?.record("getAllTasks \(tasks.map { "\($0.taskIdentifier)" }.joined(separator: ","))")
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
        transferProbe?.completionHandler = completionHandler
    }
}
