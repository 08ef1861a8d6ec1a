#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSystem
import AppHostSandbox

/// The control channel's handler: FrameReceiver (AppHostProtocol) reads and frames; here each
/// frame is decoded, judged against the protocol's table (ControlStage, through AppProcess) and
/// acted on. Also the seccomp listener the channel hands over.
extension HostLoop {
    /// Bytes and messages of one app taken per turn: a chatty app cannot hold up other apps.
    static let controlBudget = 64 * 1024
    static let controlFrameBudget = 128
    /// Text an app sends (warnings, launch failures, snapshots) is cut to this many bytes.
    static let textLimit = 4096
    static let refusalBudget = 64

    func send(_ message: HostMessage, _ record: AppRecord, _ run: AppRun) {
        guard let process = run.process, process.isReadingControl else { return }
        do {
            try process.send(message)
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            violate(record, run, "it stopped reading its control socket")
        } catch {
            // EPIPE and the like: the process is ending; its exit will be observed.
        }
    }

    /// Reads what the app sent (a budget at a time) and acts on each message in order, then on
    /// the end of the stream if it came.
    /// Returns whether it took anything.
    @discardableResult
    func readControl(_ record: AppRecord, _ run: AppRun) -> Bool {
        guard let process = run.process, process.isReadingControl else { return false }
        let batch = process.receive(budget: Self.controlBudget, maximumFrames: Self.controlFrameBudget)
        for frame in batch.frames {
            guard process.isReadingControl else {
                frame.descriptors.forEach(closeIgnoringErrors)
                continue
            }
            accept(frame, record, run, process)
        }
        guard process.isReadingControl else { return true }
        switch batch.end {
        case nil:
            // Frames read but not yet taken: the socket may stay quiet, so come back for them.
            if process.hasBufferedFrames { post(.control(run.id)) }
        case .closed:
            process.closeChannel()
            handle(record, run, .controlClosed)
        case .framing(let error):
            violate(record, run, "it sent a \(error)")
        case .tooManyDescriptors(let count):
            violate(record, run, "it passed \(count) descriptor\(count == 1 ? "" : "s") on its control socket outside a message; only sandboxed carries one, the seccomp listener")
        }
        return !batch.frames.isEmpty || batch.end != nil
    }

    /// Decodes one frame and checks it against the protocol's table before acting on it.
    private func accept(_ frame: ReceivedFrame, _ record: AppRecord, _ run: AppRun, _ process: AppProcess) {
        var descriptors = frame.descriptors
        defer { descriptors.forEach(closeIgnoringErrors) }
        let message: AppMessage
        do {
            message = try WireCoding.decode(AppMessage.self, from: frame.body)
        } catch {
            let preview = String(decoding: frame.body.prefix(40), as: UTF8.self)
            violate(record, run, "it sent a frame that is not a message (\(frame.body.count) bytes: \(preview.debugDescription))")
            return
        }
        if let violation = process.accept(message) {
            violate(record, run, violation)
            return
        }
        var listener: Int32?
        if case .sandboxed(true, _, _, _) = message, descriptors.count <= 1 {
            listener = descriptors.popLast()
        } else if !descriptors.isEmpty {
            let carries = if case .sandboxed = message { "at most one" } else { "none" }
            violate(record, run, "it passed \(descriptors.count) descriptor\(descriptors.count == 1 ? "" : "s") with \(message.name), which carries \(carries)")
            return
        }
        receive(message, listener: listener, record, run, process)
    }

    private func receive(_ message: AppMessage, listener: Int32?, _ record: AppRecord, _ run: AppRun, _ process: AppProcess) {
        switch message {
        case .hello(let version, let pid):
            if version != wireProtocolVersion {
                violate(record, run, "it speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
            } else if pid != process.pidInNamespace {
                violate(record, run, "it sent hello with pid \(pid), but its pid is \(process.pidInNamespace)")
            } else {
                process.followAppProcess()
            }
        case .ready(let version):
            if version != wireProtocolVersion {
                violate(record, run, "its SDK speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
            } else {
                handle(record, run, .ready)
            }
        case .sandboxed(_, let landlockABI, let uid, let seconds):
            sandboxed(record, run, process, listener: listener, landlockABI: landlockABI, uid: uid, took: .seconds(double: seconds))
        case .launchFailed(let reason): handle(record, run, .launchFailed(reason.cut(to: Self.textLimit)))
        case .ack(let id, let returned, let snapshot):
            handle(record, run, .acknowledged(id: id, returned: returned, snapshot: snapshot?.cut(to: Self.textLimit)))
        case .ackThenNext(let id):
            handle(record, run, .acknowledgedThenNext(id: id))
        case .taskBegan(let id, let name): handle(record, run, .taskBegan(id: id, name: name))
        case .taskEnded(let id): handle(record, run, .taskEnded(id: id))
        case .expirationHandlers(let ids, let returned): handle(record, run, .expirationHandlers(taskIDs: ids, returned: returned))
        case .warning(let text): handle(record, run, .warning(text.cut(to: Self.textLimit)))
        case .log(let level, let label, let text):
            guard let level = LogLevel(rawValue: level) else {
                return violate(record, run, "it sent a log record of level \(level.cut(to: 32).debugDescription), which swift-log does not have")
            }
            publish(HostEvent(
                time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: process.pid, event: .log,
                detail: text.cut(to: Self.textLimit), level: level, label: label.cut(to: 256)), run: nil)
        case .fetchInterval, .workCompleted, .registerTask, .submitTask, .cancelTask:
            receiveBackgroundMessage(message, record, run)
        case .locationManager(let updating, let background, let significant):
            receiveLocationManager(LocationRequest(updating: updating, background: background, significant: significant), record)
        case .requestLocationAuthorization(let always):
            receiveAuthorizationRequest(always: always, record)
        case .notification(let ask):
            receiveNotificationAsk(ask, record)
        case .audio(let active, let playing):
            handle(record, run, .audio(active: active, playing: playing))
        case .sceneSessions(let sessions):
            if let violation = receiveSceneSessions(sessions, record) { violate(record, run, violation) }
        case .transferCreated, .transferCancelled, .transferDelivered, .transferChallengeAnswered:
            if let violation = receiveTransferMessage(message, record, run) { violate(record, run, violation) }
        case .callReported(let uuid), .callEnded(let uuid):
            guard let call = UUID(uuidString: uuid) else {
                return violate(record, run, "it sent \(message.name) for \(uuid.cut(to: 64).debugDescription), which is not a UUID")
            }
            if case .callReported = message {
                handle(record, run, .callReported(call.uuidString))
            } else {
                handle(record, run, .callEnded(call.uuidString))
            }
        }
    }

    /// Ends the app for breaking the control protocol; nothing more it sends is read.
    func violate(_ record: AppRecord, _ run: AppRun, _ what: String) {
        run.process?.closeChannel()
        handle(record, run, .protocolViolation(what))
    }

    // MARK: The sandbox

    /// The runner confined the app: take its seccomp listener and say how it is confined.
    private func sandboxed(
        _ record: AppRecord, _ run: AppRun, _ process: AppProcess, listener: Int32?, landlockABI: Int32, uid: UInt32, took: Duration
    ) {
        var notes: [String] = []
        if let listener, let syscalls = SyscallListener(fd: listener) {
            process.adopt(syscalls, on: queue) { [weak self, id = run.id] in self?.receive(.refusals(id)) }
            notes.append("seccomp")
        } else {
            // A listener that could not be taken is closed by SyscallListener's initializer.
            notes.append("seccomp, degraded: refusals are not reported (no user notification)")
        }
        notes.append(landlockABI > 0 ? "Landlock ABI \(landlockABI)" : "no Landlock, degraded: files limited only by permissions")
        if process.isNamespaced { notes.append("own PID and mount namespaces") }
        notes.append("uid \(uid)")
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: process.pid,
            event: .sandboxed, state: currentState(of: record), detail: notes.joined(separator: ", "), elapsed: took), run: run)
        // Its first measurement, while it loads its plugin and the host waits for it: a report has
        // figures from here on, and its launch's state changes measure it again once their next
        // callback is on its way, not before (HostLoop+Resources.swift).
        recordUsage(run)
    }

    /// Answers every refused call waiting in the app's seccomp listener: EPERM and a violation,
    /// or, for a dangerous call, the end of the app by SIGSYS (the call is never answered, so it
    /// never runs).
    func drainRefusals(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process, let listener = process.listener else { return }
        // A budget per turn: threads that keep making refused calls cannot hold up other apps
        // (the listener stays readable, so the rest is answered on the next turn).
        for _ in 0..<Self.refusalBudget {
            guard let call = listener.next() else { return }
            let state = currentState(of: record)
            let fatal = call.isDangerous
            let violation = SandboxViolation(time: Date(), call: call.description, state: state, fatal: fatal)
            run.record(violation)
            publish(HostEvent(
                time: violation.time, app: record.bundle.identifier, name: record.bundle.name, pid: process.pid,
                event: .violation, state: state,
                detail: fatal ? "\(call.description) is forbidden: killed by SIGSYS" : "\(call.description) refused (EPERM)"), run: run)
            if let termination = resources.refusedCall(call.description, dangerous: fatal, state: state, count: run.violationCount) {
                // Left unanswered: a call that ends the app never returns.
                handle(record, run, .enforce(termination))
                return
            }
            listener.refuse(call)
        }
    }
}

extension String {
    /// At most `limit` bytes of UTF-8, marked where cut.
    func cut(to limit: Int) -> String {
        guard utf8.count > limit else { return self }
        return String(decoding: utf8.prefix(limit), as: UTF8.self) + " [cut at \(limit) bytes]"
    }
}
