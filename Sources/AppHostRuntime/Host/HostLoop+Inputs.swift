#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol

/// What comes into the host's loop besides the façade's commands (docs/internals.md, "How the
/// code is laid out"): from the apps' processes, the kernel, the host's timer, the threads that work off the
/// loop (the spawn thread, the stores' writer, the transfer engine), and the loop's own passes,
/// queued behind the work that asked for them. Each is taken whole, one at a time, by
/// `HostLoop.receive`.
///
/// An app's inputs name its run, not the run's objects: one that comes after the run has ended
/// (a source that fired as the process was closed) finds no run and is dropped.
enum HostInput: Sendable {
    /// The run's control socket is readable, or frames read from it wait to be taken.
    case control(RunID)
    /// The run's process ended (its pidfd is readable).
    case exited(RunID)
    /// The run's memory group reached its limit (the kernel stops it there).
    case memoryFull(RunID)
    /// The run's process wrote a crash record.
    case diagnostics(RunID)
    /// The run's seccomp listener holds refused calls to answer.
    case refusals(RunID)
    /// Every thread of the run's process is stopped, as its suspension asked.
    case frozen(RunID)
    /// The run's memory, measured again once its state change is over.
    case measure(RunID)
    /// The launch waited for the standby being made, which is done: it goes on.
    case standbyAwaited(RunID, reason: String, callbacks: [WireCallbackRequest])
    /// The run's storage was set up off the loop (StorageService.prepareOffTheLoop): it is
    /// committed, and the launch goes on.
    case storagePrepared(RunID, StoragePreparation, reason: String, callbacks: [WireCallbackRequest])
    /// The launchpad started the run's process, or could not.
    case launched(RunID, LaunchResult)
    /// The launchpad's spawn thread did what it was asked (started or reaped the template, made
    /// a standby, started a process, stopped).
    case launchpad(Launchpad.Return)
    /// The host's timer went off: the deadlines due go where they belong.
    case deadlines
    /// A pass over the host's work, queued behind what asked for it.
    case pass(HostPass)
    /// A background transfer's engine reported progress, a response or its end.
    case transferUpdate(id: String, TransferUpdate)
    /// An upload's body was copied off the loop (nil: it was), for the transfer `id`.
    case transferBodyCopied(id: String, failure: String?)
    /// The transfer `id`'s record is on the disk.
    case transferKept(id: String)
    /// What the run `RunID` asked to keep (a task request, a fetch interval) is on the disk: it
    /// is said now, as the event `EventName` with its detail.
    case kept(RunID, EventName, String)
    /// The run broke the control protocol, found while the host acted (its socket full: it
    /// stopped reading); its channel is closed already.
    case violation(RunID, String)
    /// Something off the loop has something to say (a store that cannot be written).
    case warning(String)
}

/// The passes the loop runs behind the work that asks for them (a state change, an installation,
/// a message), so that each sees the host as that work leaves it.
enum HostPass: Sendable {
    /// Due BGTaskScheduler requests and fetches (`runDueWork`).
    case scheduler
    /// Transfers to start, pause or deliver (`reconsiderTransfers`, `deliverTransfers`).
    case transfers
    /// The next step of a memory-pressure episode (`stepPressure`).
    case pressure
    /// Notifications that are due (`deliverDueNotifications`).
    case notifications
}

extension HostLoop {
    /// Queues `input` behind the loop's current work, from any thread. A host released
    /// meanwhile takes nothing.
    func post(_ input: HostInput) {
        queue.async { [weak self] in self?.receive(input) }
    }

    /// Takes one input on the loop and routes it: to the app's machine and the subsystem it
    /// concerns.
    func receive(_ input: HostInput) {
        switch input {
        case .control(let id):
            guard let (record, run) = current(id) else { return }
            readControl(record, run)
        case .exited(let id):
            guard let (record, run) = current(id) else { return }
            reap(record, run)
        case .memoryFull(let id):
            guard let (record, run) = current(id) else { return }
            memoryGroupFull(record, run)
        case .diagnostics(let id):
            guard let (record, run) = current(id) else { return }
            readDiagnostics(record, run)
        case .refusals(let id):
            guard let (record, run) = current(id) else { return }
            drainRefusals(record, run)
        case .frozen(let id):
            guard let (record, run) = current(id) else { return }
            frozen(record, run)
        case .measure(let id):
            guard let (_, run) = current(id) else { return }
            recordUsage(run)
        case .standbyAwaited(let id, let reason, let callbacks):
            guard let (record, run) = current(id) else { return }
            resumeSpawn(record, run, reason: reason, callbacks: callbacks)
        case .storagePrepared(let id, let preparation, let reason, let callbacks):
            storagePrepared(id, preparation, reason: reason, callbacks: callbacks)
        case .launched(let id, let result):
            guard let (record, run) = current(id) else { return result.abandon() }
            launched(result, record, run)
        case .launchpad(let value):
            switch launchpad.receive(value) {
            case .launched(let id, let result)?: receive(.launched(id, result))
            case .stopped?: shutDownGoesOn()
            case nil: break
            }
        case .deadlines:
            fireDeadlines()
        case .pass(let pass):
            run(pass)
        case .transferUpdate(let id, let update):
            performTransfers(transferDesk.update(id, update, transferFacts))
        case .transferBodyCopied(let id, let failure):
            performTransfers(transferDesk.bodyCopied(id, failure: failure, transferFacts))
        case .transferKept(let id):
            performTransfers(transferDesk.kept(id, transferFacts))
        case .violation(let id, let what):
            guard let (record, run) = current(id) else { return }
            handle(record, run, .protocolViolation(what))
        case .kept(let id, let name, let detail):
            sayKept(name, detail, by: id)
        case .warning(let line):
            publish(HostEvent(time: Date(), event: .warning, detail: line), run: nil)
        }
    }

    /// The app and run `id` names, while that run is its app's.
    func current(_ id: RunID) -> (AppRecord, AppRun)? {
        let record = apps[id.app]
        guard let run = record.run, run.id == id else { return nil }
        return (record, run)
    }

    private func run(_ pass: HostPass) {
        switch pass {
        case .scheduler:
            scheduler.passRuns()
            runDueWork()
        case .transfers:
            transferDesk.passRuns()
            reconsiderTransfers()
            for record in apps.records(identifiers: transferDesk.owedApps) { deliverTransfers(record) }
        case .pressure:
            stepPressure()
        case .notifications:
            deliverDueNotifications()
        }
    }
}
