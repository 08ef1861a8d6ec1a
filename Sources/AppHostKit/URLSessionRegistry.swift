import Foundation
import FoundationNetworking
import Synchronization
import AppHostProtocol
import AppHostSystem

/// The app process's background sessions, their tasks, and the finished transfers the host sent
/// that wait for their session's delegate: a relaunched app gets them once it makes the session
/// again with the same identifier, as on iOS. The delegate's calls run on the session's delegate
/// queue (docs/transfers.md, "Background transfers"), each transfer's in order, then
/// `urlSessionDidFinishEvents`.
final class URLSessionRegistry: Sendable {
    private struct State {
        var sessions: [String: URLSession] = [:]
        var tasks: [String: [Int: any BackgroundTask]] = [:]
        /// The transfers the host carried on for the app, by session: given back as tasks when
        /// the app makes the session.
        var known: [String: [WireTransfer]]?
        var lastTask: [String: Int] = [:]
        var pending: [String: [WireTransferEvent]] = [:]
        /// Sessions whose `handleEventsForBackgroundURLSession` waits for `urlSessionDidFinishEvents`.
        var finishing: Set<String> = []
    }

    let link: HostLink
    private let state = Mutex(State())

    init(link: HostLink) { self.link = link }

    /// The transfers the host said the app has, by session, read once from the configuration.
    private func knownTransfers(_ state: inout State) -> [String: [WireTransfer]] {
        if let known = state.known { return known }
        let known = Dictionary(grouping: link.configuration.transfers ?? [], by: \.session)
        state.known = known
        for (session, transfers) in known { state.lastTask[session] = transfers.map(\.task).max() ?? 0 }
        return known
    }

    private static func taskType(_ kind: WireTransfer.Kind) -> any BackgroundTask.Type {
        kind == .download ? BackgroundDownloadTask.self : BackgroundUploadTask.self
    }

    func attach(_ session: URLSession) {
        let id = session.identifier
        state.withLock { state in
            state.sessions[id] = session
            for transfer in knownTransfers(&state)[id] ?? [] where state.tasks[id]?[transfer.task] == nil {
                state.tasks[id, default: [:]][transfer.task] = Self.taskType(transfer.kind).init(session: session, wire: transfer, state: .running)
            }
        }
        flush(id)
    }

    func make<Task: BackgroundTask>(_ type: Task.Type, kind: WireTransfer.Kind, request: URLRequest, file: URL?, resumeData: Data? = nil, in session: URLSession) -> Task {
        state.withLock { state in
            _ = knownTransfers(&state)
            let number = (state.lastTask[session.identifier] ?? 0) + 1
            state.lastTask[session.identifier] = number
            let wire = WireTransfer(
                session: session.identifier, task: number, kind: kind, url: request.url?.absoluteString ?? "", file: file?.path,
                method: request.httpMethod, isDiscretionary: session.configuration.isDiscretionary,
                sessionSendsLaunchEvents: session.configuration.sessionSendsLaunchEvents, headers: request.allHTTPHeaderFields,
                resumeData: resumeData)
            let task = Task(session: session, wire: wire, state: .suspended)
            state.tasks[session.identifier, default: [:]][number] = task
            return task
        }
    }

    /// `downloadTask(withResumeData:)`: the request the resume data names, going on from the
    /// part file the host kept (the host judges the data again). Data that is not the host's
    /// makes a task whose resume fails with `URLError.cannotDecodeRawData`.
    func make(resumingFrom data: Data, in session: URLSession) -> URLSessionDownloadTask {
        let resume = WireResumeData(data)
        var request = URLRequest(url: URL(string: resume?.url ?? "") ?? URL(fileURLWithPath: "/"))
        request.httpMethod = resume?.method
        request.allHTTPHeaderFields = resume?.headers
        return make(BackgroundDownloadTask.self, kind: .download, request: request, file: nil, resumeData: data, in: session)
    }

    func tasks(of session: URLSession) -> [URLSessionTask] {
        state.withLock { state in
            (state.tasks[session.identifier] ?? [:]).values.filter { $0.core.state != .completed }.sorted { $0.core.taskIdentifier < $1.core.taskIdentifier }
        }
    }

    /// `resume()` of a new task: checked here as the host will check it again, then handed over.
    func start(_ wire: WireTransfer, in session: URLSession) {
        var problem = wire.problem(container: link.configuration.containerPath)
        if problem == nil, let data = wire.resumeData, WireResumeData(data) == nil {
            problem = (WireTransfer.ErrorCode.cannotDecodeRawData, "the resume data is not what the host gave")
        }
        if let problem {
            link.warn("\(wire.kind == .download ? "downloadTask" : "uploadTask") \(wire.task) of session \(wire.session) not started: \(problem.message)")
            received([WireTransferEvent(transfer: wire, errorCode: problem.code, errorMessage: problem.message)], batch: nil, report: false)
            return
        }
        link.send(.transferCreated(wire))
    }

    func cancel(_ task: BackgroundTaskCore, producingResumeData: Bool, in session: URLSession) {
        link.send(.transferCancelled(session: session.identifier, task: task.taskIdentifier, producingResumeData: producingResumeData ? true : nil))
    }

    // MARK: Delivery (on each session's delegate queue)

    /// `transferProgress`: the delegate's `didWriteData` (a download) or `didSendBodyData` (an
    /// upload), with what moved since the last; the task's counts are set at once. With
    /// `resumedAt`, a download went on from there: `didResumeAtOffset`.
    func progress(session id: String, task number: Int, received: Int64, sent: Int64, expected: Int64?, resumedAt: Int64? = nil) {
        let found = state.withLock { state -> (URLSession, any BackgroundTask)? in
            guard let session = state.sessions[id], let task = state.tasks[id]?[number] else { return nil }
            return (session, task)
        }
        guard let (session, task) = found else { return }
        let moved = task.core.moved(received: received, sent: sent, expected: expected)
        if let resumedAt, let download = task as? BackgroundDownloadTask {
            session.delegateQueue.addOperation {
                (session.delegate as? any URLSessionDownloadDelegate)?.urlSession(
                    session, downloadTask: download, didResumeAtOffset: resumedAt, expectedTotalBytes: expected ?? NSURLSessionTransferSizeUnknown)
            }
            return
        }
        session.delegateQueue.addOperation {
            if let download = task as? BackgroundDownloadTask {
                guard moved.received > 0 else { return }
                (session.delegate as? any URLSessionDownloadDelegate)?.urlSession(
                    session, downloadTask: download, didWriteData: moved.received, totalBytesWritten: received,
                    totalBytesExpectedToWrite: expected ?? NSURLSessionTransferSizeUnknown)
            } else if moved.sent > 0 {
                (session.delegate as? any URLSessionTaskDelegate)?.urlSession(
                    session, task: task, didSendBodyData: moved.sent, totalBytesSent: sent, totalBytesExpectedToSend: task.core.bodySize)
            }
        }
    }

    /// Transfers that finished (or ask to authenticate): delivered to their session's delegate
    /// now if the app has made the session, else when it does.
    func received(_ events: [WireTransferEvent], batch: String?, report: Bool = true) {
        state.withLock { state in
            for event in events { state.pending[event.transfer.session, default: []].append(event) }
            if let batch { state.finishing.insert(batch) }
        }
        for session in Set(events.map(\.transfer.session) + (batch.map { [$0] } ?? [])) { flush(session, report: report) }
    }

    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)` on the main
    /// thread, as UIKit calls it; then the events, on the session's delegate queue. The
    /// completion handler may be called from any thread.
    @MainActor
    func handleEvents(_ event: WireBackgroundEvent?, _ application: Application, _ delegate: any ApplicationDelegateCallbacks) {
        guard let event, let session = event.urlSession else { return }
        let called = Atomic<Bool>(false)
        let link = link
        let method = WireCallback.handleEventsForBackgroundURLSession.delegateMethodName
        delegate.application(application, handleEventsForBackgroundURLSession: session) {
            guard !called.exchange(true, ordering: .acquiringAndReleasing) else {
                link.warn("the completion handler of \(method) was called twice; ignoring the second call")
                return
            }
            link.send(.workCompleted(id: event.work, result: "success"))
        }
        received(event.transfers ?? [], batch: session)
    }

    /// Hands the session's waiting events to its delegate queue.
    private func flush(_ id: String, report: Bool = true) {
        let taken = state.withLock { state -> (URLSession, [(any BackgroundTask, WireTransferEvent)], Bool)? in
            guard let session = state.sessions[id] else { return nil }
            let events = state.pending.removeValue(forKey: id) ?? []
            let tasks = events.map { event -> (any BackgroundTask, WireTransferEvent) in
                let transfer = event.transfer
                let task = state.tasks[id]?[transfer.task] ?? Self.taskType(transfer.kind).init(session: session, wire: transfer, state: .running)
                // A challenge is not the end: the task stays the session's.
                if event.challenge == nil { state.tasks[id]?[transfer.task] = nil } else { state.tasks[id, default: [:]][transfer.task] = task }
                return (task, event)
            }
            return (session, tasks, state.finishing.remove(id) != nil)
        }
        guard let (session, tasks, finishing) = taken else { return }
        for (task, event) in tasks {
            session.delegateQueue.addOperation { [self] in
                if event.challenge != nil {
                    challenge(task, event, in: session)
                } else {
                    deliver(task, event, in: session, report: report)
                }
            }
        }
        if finishing {
            session.delegateQueue.addOperation { (session.delegate as? any URLSessionDelegate)?.urlSessionDidFinishEvents(forBackgroundURLSession: session) }
        }
    }

    /// One finished transfer's calls: the download's file or the upload's response, then
    /// `didCompleteWithError`; then the host hears that they returned.
    private func deliver(_ task: any BackgroundTask, _ event: WireTransferEvent, in session: URLSession, report: Bool) {
        let id = session.identifier
        // Delivered before the host that sent it was killed: acknowledged, not shown again.
        // Recorded before the delegate runs: a host killed from here on (which ends this
        // process) never has the app see the transfer twice (exactly once, README.md,
        // "What survives the host").
        if let transferID = event.id {
            guard !deliveredTransfers.contains(transferID) else {
                if report { link.send(.transferDelivered(session: id, task: task.core.taskIdentifier)) }
                return
            }
            deliveredTransfers.insert(transferID)
        }
        let error = event.errorCode.map { code in
            var info: [String: Any] = [NSLocalizedDescriptionKey: event.errorMessage ?? "the transfer failed"]
            if let reason = event.cancelledReason { info[NSURLErrorBackgroundTaskCancelledReasonKey] = reason }
            if let data = event.resumeData { info[URLSessionDownloadTaskResumeData] = data }
            return URLError(URLError.Code(rawValue: code) ?? .unknown, userInfo: info)
        }
        let resumeDataHandler = task.core.finish(event, error: error)
        resumeDataHandler?(event.resumeData)
        if let location = event.location, error == nil, let download = task as? BackgroundDownloadTask {
            (session.delegate as? any URLSessionDownloadDelegate)?.urlSession(
                session, downloadTask: download, didFinishDownloadingTo: URL(fileURLWithPath: location))
            // As on iOS, the file is gone once the delegate returns: it had to move it.
            try? FileManager.default.removeItem(atPath: location)
        }
        if let body = event.responseBody, let upload = task as? BackgroundUploadTask {
            (session.delegate as? any URLSessionDataDelegate)?.urlSession(session, dataTask: upload, didReceive: body)
        }
        (session.delegate as? any URLSessionTaskDelegate)?.urlSession(session, task: task, didCompleteWithError: error)
        // A transfer the host refused at its creation has no id: it kept nothing to acknowledge.
        if report && event.id != nil { link.send(.transferDelivered(session: id, task: task.core.taskIdentifier)) }
    }
}

/// The app process's sessions and the transfer events waiting for them.
let urlSessionRegistry = URLSessionRegistry(link: hostLink)

/// The transfers handed to the app's delegate, by the host's id, kept in the container
/// (`Library/.apphost-delivered-transfers`, the latest 512): a host killed after the app got a
/// transfer and before it heard so delivers it again, and the app acknowledges it without
/// calling its delegate a second time (exactly once, across a host's death).
final class DeliveredTransfers: Sendable {
    private static let kept = 512
    private let ids = Mutex<[String]?>(nil)
    /// The container it is kept in (the app's, once it runs in a host).
    private let container: @Sendable () -> URL

    init(container: @escaping @Sendable () -> URL = { Application.shared.containerURL }) {
        self.container = container
    }

    private var file: DurableFile {
        DurableFile(path: container().appendingPathComponent("Library/.apphost-delivered-transfers").path)
    }

    func contains(_ id: String) -> Bool {
        ids.withLock { ids in
            if ids == nil { ids = load() }
            return ids?.contains(id) ?? false
        }
    }

    /// Records `id`: whole or absent for a process killed at any moment (not synced to the disk:
    /// quick, as it comes before the delegate's calls).
    func insert(_ id: String) {
        let snapshot = ids.withLock { ids -> [String] in
            var list = ids ?? load()
            list.append(id)
            if list.count > Self.kept { list.removeFirst(list.count - Self.kept) }
            ids = list
            return list
        }
        let file = file
        if access(file.directory, F_OK) != 0 { mkdir(file.directory, 0o700) }
        try? file.replace(with: Array((snapshot.joined(separator: "\n") + "\n").utf8), synced: false)
    }

    private func load() -> [String] {
        guard let bytes = try? file.read() else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

let deliveredTransfers = DeliveredTransfers()
