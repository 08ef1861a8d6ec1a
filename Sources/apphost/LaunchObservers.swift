import AppHostRuntime
import AppHostSystem
import Foundation
import Synchronization

/// The first end the system imposed on an app, which decides `apphost launch`'s exit status
/// (HostExitStatus; README.md, "Exit status").
final class LaunchOutcome: Sendable {
    private struct End {
        var status: HostExitStatus
        var line: String
    }

    private let first = Mutex<End?>(nil)

    /// Called with every event, on the supervisor's queue.
    func observe(_ event: HostEvent) {
        guard event.event == .terminated, let termination = event.termination,
            let status = HostExitStatus(termination)
        else { return }
        let who = event.name ?? event.app ?? "an app"
        var line = "\(who) was ended: \(termination.namespace) \(termination.formattedCode ?? termination.kind.rawValue), \(termination.reason)"
        if let report = event.report { line += " (report: \(report))" }
        first.withLock { first in
            if first == nil { first = End(status: status, line: TerminalText.escaping(line)) }
        }
    }

    /// The status to exit with: the first system end's, else `requested` (0, or 1 for a failed
    /// script command). Says on standard error why it is not 0.
    func exitStatus(requested: Int32) -> Int32 {
        guard let end = first.withLock({ $0 }) else { return requested }
        writeStandardError("apphost: exit status \(end.status.rawValue): \(end.status.meaning); \(end.line)\n")
        return end.status.rawValue
    }
}

/// Follows the launch of the first app named on the command line. If it cannot launch — its
/// plugin or delegate is unusable, or a launching method returns false — that is bad input: one
/// line on standard error and exit status 1. (An app killed during its launch for breaking a rule,
/// or crashing, is an app's failure, not bad input: it gets its report and the host runs on.)
final class FirstLaunch: Sendable {
    private struct State {
        var decided = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let identifier: String
    private let label: String
    private let state = Mutex(State())
    private let exitHook = Mutex<(@Sendable () -> Void)?>(nil)

    /// Run before the host exits because the first app cannot launch (it releases the storage
    /// the launch mounted).
    var beforeExit: (@Sendable () -> Void)? {
        get { exitHook.withLock { $0 } }
        set { exitHook.withLock { $0 = newValue } }
    }

    init(identifier: String, label: String) {
        self.identifier = identifier
        self.label = label
    }

    /// Called with every event, on the supervisor's queue.
    func observe(_ event: HostEvent) {
        guard event.app == identifier else { return }
        switch event.event {
        case .didBecomeActive, .didEnterBackground:
            decide()
        case .terminated:
            guard let termination = event.termination, termination.kind == .launchFailed else {
                decide()
                return
            }
            if !isDecided {
                writeStandardError("apphost: \(label) cannot launch: \(termination.reason)\n")
                beforeExit?()
                OutputQueue.standardOutput.drain()
                Foundation.exit(1)
            }
        default:
            break
        }
    }

    /// Returns once the first app has launched, failed, or been ended.
    func decided() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.decided { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private var isDecided: Bool { state.withLock { $0.decided } }

    private func decide() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.decided = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// What a run leaves behind besides its reports: the instance's journal of the run (for
/// `apphost reports --timeline`) and, with `--trace`, the Trace Event file.
final class RunRecording: Sendable {
    private let stateDirectory: URL
    private let journal = Mutex<EventJournal?>(nil)
    private let journalFailed = Mutex(false)
    private let trace: TraceEventWriter?

    /// Opens the trace file at once, so that an unwritable path is bad input before any app runs.
    init(stateDirectory: URL, tracePath: String?) {
        self.stateDirectory = stateDirectory
        do {
            trace = try tracePath.map { try TraceEventWriter(url: URL(fileURLWithPath: $0)) }
        } catch {
            fail("cannot write the trace \(tracePath ?? ""): \(error)")
        }
    }

    /// Called with every event, on the supervisor's queue. The journal starts with the first
    /// event, which comes only once the host holds its instance.
    func record(_ event: HostEvent) {
        trace?.record(event)
        let journal = self.journal.withLock { journal -> EventJournal? in
            if journal == nil && !journalFailed.withLock({ $0 }) {
                do {
                    journal = try EventJournal(stateDirectory: stateDirectory)
                } catch {
                    journalFailed.withLock { $0 = true }
                    writeStandardError("apphost: the run is not journaled (no timeline): \(error)\n")
                }
            }
            return journal
        }
        journal?.record(event)
    }

    /// Writes what is queued and closes the files.
    func finish() {
        journal.withLock { $0?.close() }
        trace?.finish()
    }
}
