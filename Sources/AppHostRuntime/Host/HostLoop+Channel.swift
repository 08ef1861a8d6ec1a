#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSystem
import AppHostSandbox

/// The control channel's handler: FrameReceiver (AppHostProtocol) reads and frames; each frame
/// is judged by the protocol's rules (`ControlStage.admit`, in the process's stage) and what is
/// admitted is routed to the app's machine or a subsystem. Also the seccomp listener the channel
/// hands over.
extension HostLoop {
    func send(_ message: HostMessage, _ record: AppRecord, _ run: AppRun) {
        guard let process = run.process, process.isReadingControl else { return }
        do {
            try process.send(message)
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            // Nothing more is sent or read; the machine hears of it as an input of its own, not
            // within the action that sent.
            process.closeChannel()
            post(.violation(run.id, "it stopped reading its control socket"))
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
        let batch = process.receive(budget: ControlStage.bytesPerTurn, maximumFrames: ControlStage.framesPerTurn)
        for frame in batch.frames {
            guard process.isReadingControl else {
                frame.descriptors.forEach(closeIgnoringErrors)
                continue
            }
            accept(frame, record, run, process)
        }
        guard process.isReadingControl else { return true }
        if let end = batch.end {
            if let violation = ControlStage.violation(endingWith: end) {
                violate(record, run, violation)
            } else {
                process.closeChannel()
                handle(record, run, .controlClosed)
            }
        } else if process.hasBufferedFrames {
            // Frames read but not yet taken: the socket may stay quiet, so come back for them.
            post(.control(run.id))
        }
        return !batch.frames.isEmpty || batch.end != nil
    }

    /// Asks the protocol's rules about one frame, in the process's stage, and acts on the answer.
    /// Every descriptor that came with the frame is closed here, but the listener admitted with
    /// `sandboxed` (which `sandboxed(_:…)` adopts or closes).
    private func accept(_ frame: ReceivedFrame, _ record: AppRecord, _ run: AppRun, _ process: AppProcess) {
        let admission = process.stage.admit(frame, pidInNamespace: process.pidInNamespace)
        admission.unkept(of: frame).forEach(closeIgnoringErrors)
        switch admission {
        case .violation(let what):
            violate(record, run, what)
        case .message(let message, let listener):
            // Admitted in this very stage: accepted, and the process's stage moves on.
            let refusal = process.accept(message)
            assert(refusal == nil, "admitted but refused: \(refusal ?? "")")
            receive(message, listener: listener, record, run, process)
        }
    }

    /// Routes an admitted message (its fields already checked and its texts cut) to the app's
    /// machine or the subsystem it concerns.
    private func receive(_ message: AppMessage, listener: Int32?, _ record: AppRecord, _ run: AppRun, _ process: AppProcess) {
        switch message {
        case .hello:
            process.followAppProcess()
        case .ready:
            handle(record, run, .ready)
        case .sandboxed(_, let landlockABI, let uid, let seconds):
            sandboxed(record, run, process, listener: listener, landlockABI: landlockABI, uid: uid, took: .seconds(double: seconds))
        case .launchFailed(let reason): handle(record, run, .launchFailed(reason))
        case .ack(let id, let returned, let snapshot):
            handle(record, run, .acknowledged(id: id, returned: returned, snapshot: snapshot))
        case .ackThenNext(let id):
            handle(record, run, .acknowledgedThenNext(id: id))
        case .taskBegan(let id, let name): handle(record, run, .taskBegan(id: id, name: name))
        case .taskEnded(let id): handle(record, run, .taskEnded(id: id))
        case .expirationHandlers(let ids, let returned): handle(record, run, .expirationHandlers(taskIDs: ids, returned: returned))
        case .warning(let text): handle(record, run, .warning(text))
        case .log(let level, let label, let text):
            // Admitted: the level is one swift-log has.
            publish(HostEvent(
                time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: process.pid, event: .log,
                detail: text, level: LogLevel(rawValue: level), label: label), run: nil)
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
        case .callReported(let uuid): handle(record, run, .callReported(uuid))
        case .callEnded(let uuid): handle(record, run, .callEnded(uuid))
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
        for _ in 0..<ControlStage.refusalsPerTurn {
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
