import Foundation
import AppHostProtocol
import AppHostSandbox

// Routing for the background transfers (docs/transfers.md, "Background transfers"): the desk
// (TransferDesk) decides; the host gathers what it needs to know of the apps and performs what
// it returns.
extension HostLoop {
    // MARK: What the desk is told

    /// The host's conditions and apps, as the desk sees them now.
    var transferFacts: TransferDesk.Facts {
        TransferDesk.Facts(
            now: scheduler.now, network: scheduler.conditions.network, power: scheduler.conditions.power,
            shuttingDown: waiters.isShuttingDown,
            app: { [unowned self] identifier in apps.record(identifier: identifier).map { transferApp($0) } },
            usage: { [unowned self] identifier in
                let part = storage.usage(.app(identifier))
                return (part.bytes, part.limitBytes ?? configuration.policy.storageLimit)
            })
    }

    /// The app (and its run `run`, else its current one) as the desk sees it.
    func transferApp(_ record: AppRecord, _ run: AppRun? = nil) -> TransferDesk.App {
        let identifier = record.bundle.identifier
        return TransferDesk.App(
            identifier: identifier, name: record.bundle.name, forceQuit: scheduler.isForceQuit(identifier),
            container: storage.containerPath(.app(identifier)),
            run: (run ?? record.run).map { run in
                let machine = run.machine
                return TransferDesk.Run(
                    id: run.id, state: machine.state, isAlive: machine.isAlive, isLive: machine.isLive, isEnding: machine.isEnding,
                    launchFinished: machine.launchFinished, justLaunched: machine.hasJustLaunched, keptRunning: machine.isKeptRunning)
            })
    }

    /// `transferCreated`, `transferCancelled`, `transferDelivered`, `transferChallengeAnswered`;
    /// returns a violation, if any.
    func receiveTransferMessage(_ message: AppMessage, _ record: AppRecord, _ run: AppRun) -> String? {
        let entitled = record.bundle.entitlements.contains(SyscallProfile.Entitlement.networkClient.rawValue)
        let (violation, effects) = transferDesk.receive(message, from: transferApp(record, run), networkEntitled: entitled, transferFacts)
        performTransfers(effects)
        return violation
    }

    /// Runs `reconsiderTransfers` and delivers what is owed once the current work on the queue
    /// is done (after a state change, an installation).
    func queueTransferPass() {
        guard transferDesk.queuePass() else { return }
        post(.pass(.transfers))
    }

    /// Starts the transfers whose conditions hold and pauses those whose no longer do. Returns
    /// what it started, for the conditions line.
    @discardableResult
    func reconsiderTransfers() -> [String] {
        let (started, effects) = transferDesk.reconsider(transferFacts)
        performTransfers(effects)
        return started
    }

    /// Hands the app what it is owed of its transfers (TransferDesk's `deliver`).
    func deliverTransfers(_ record: AppRecord) {
        performTransfers(transferDesk.deliver(to: transferApp(record), transferFacts))
    }

    /// Cancels every unfinished transfer of the app (a force quit), each told at its next run.
    func cancelTransfers(of record: AppRecord, because reason: String, reasonCode: Int) {
        performTransfers(transferDesk.cancelAll(of: record.bundle.identifier, because: reason, reasonCode: reasonCode))
    }

    // MARK: What the desk returns

    func performTransfers(_ effects: [TransferDesk.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let message, let identifier, let id):
                guard let record = apps.record(identifier: identifier), let run = record.run, run.id == id else { continue }
                send(message, record, run)
            case .wake(let identifier, let session):
                guard let record = apps.record(identifier: identifier) else { continue }
                let how = deliver(BackgroundEvent(kind: .backgroundURLSession, urlSession: session), to: record)
                announce(record, command: .transfer, "background URLSession \(session): its transfers finished", how)
            case .announce(let identifier, let line):
                if let record = apps.record(identifier: identifier) {
                    announce(record, command: .transfer, line, nil)
                } else {
                    publish(HostEvent(time: Date(), event: .transfer, detail: "\(identifier): \(line)"), run: nil)
                }
            case .start(let job):
                let id = job.id
                configuration.transferRunner?.start(job) { [weak self] update in self?.post(.transferUpdate(id: id, update)) }
            case .stop(let id):
                configuration.transferRunner?.stop(id)
            case .copyBody(let id, let body, let destination):
                DispatchQueue.global(qos: .utility).async { [weak self] in
                    let failure = body.copy(to: destination)
                    self?.post(.transferBodyCopied(id: id, failure: failure))
                }
            case .whenSaved(let id):
                transferDesk.whenSaved { [weak self] in self?.post(.transferKept(id: id)) }
            case .pass:
                queueTransferPass()
            case .passAfter(let delay):
                timers.set(.transfers, at: clock.now + delay)
            }
        }
    }

    // MARK: Listings

    /// Every transfer the host keeps, for `transfers`.
    func transferListing() -> [TransferListing] {
        let (listed, flush) = queue.sync { (transferDesk.listing(transferFacts), transferDesk.flush) }
        // Answered once what it lists is on the disk, and the files of what it no longer lists
        // are gone (the store's writer, not the loop, waits).
        flush()
        return listed
    }

    /// The app's transfers, for `ps` and its report.
    func transferListing(of bundleIdentifier: String) -> [TransferListing] {
        transferDesk.listing(of: bundleIdentifier, transferFacts)
    }
}
