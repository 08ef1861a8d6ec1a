#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

/// The host's background transfers (README.md, "Background transfers"): the records kept in the
/// state directory, the service that runs them, and what is owed to each app.
struct Transfers {
    let store: TransferStore
    var records: [TransferRecord]
    /// The records as last handed to the store: a save writes only what differs from them.
    var saved: [String: TransferRecord]
    /// nil: this host has none (a Supervisor made without one); transfers wait for it.
    let service: (any TransferRunner)?
    var loadWarnings: [String]
    /// Transfers whose files go once the next save is on the disk.
    var fileRemovals: [String] = []
    /// Transfers created whose record is not on the disk yet: not started before it is.
    var unkept: Set<String> = []
    /// Uploads whose body is still being copied out of the container: not kept before it is.
    var copying: Set<String> = []
    /// What is owed to which run, and the wakes for it (TransferDeliveries).
    var deliveries = TransferDeliveries()
    var passQueued = false
    /// What each app's downloads may still write, by bundle identifier (its storage limit).
    var allowances: [String: TransferAllowance] = [:]
    /// The earliest begin date (scheduler time) a timer is armed for, if any.
    var beginArmed: Double?
    /// The credential each transfer answers its server's challenge with, by transfer: in
    /// memory only (a `.permanent` one is kept in `credentialStore` too).
    var credentials: [String: TransferCredential] = [:]
    /// The credentials the apps gave as `.permanent`, by app and protection space (0600).
    let credentialStore: TransferCredentialStore

    init(stateDirectory: URL, service: (any TransferRunner)?) {
        self.init(store: TransferStore(stateDirectory: stateDirectory), service: service)
    }

    init(store: TransferStore, service: (any TransferRunner)?) {
        self.service = service
        self.store = store
        credentialStore = TransferCredentialStore(stateDirectory: store.directory.deletingLastPathComponent())
        (records, loadWarnings) = store.load()
        saved = Dictionary(records.map { ($0.id, $0) }) { $1 }
        // A transfer that ran when the host ended resumes from its part file.
        for index in records.indices where records[index].phase == .running { records[index].phase = .waiting }
    }

    /// The changes since the last save, by id (nil: removed), and the records as saved now.
    mutating func changes() -> [String: TransferRecord?] {
        var changes: [String: TransferRecord?] = [:]
        var current: [String: TransferRecord] = [:]
        current.reserveCapacity(records.count)
        for record in records where !copying.contains(record.id) {
            current[record.id] = record
            if saved[record.id] != record { changes[record.id] = .some(record) }
        }
        for id in saved.keys where current[id] == nil { changes[id] = .some(nil) }
        saved = current
        return changes
    }
}

extension Supervisor {
    /// A transfer's strings are cut at these (a hostile app cannot make the store grow).
    static let transferLimits = (session: 256, url: 8192, file: 4096, description: 1024, headers: 32, headerBytes: 8192)
    /// Transfers one app may have at once.
    static let maximumTransfersPerApp = 1000

    // MARK: The app's messages

    /// `transferCreated`, `transferCancelled`, `transferDelivered`; returns a violation, if any.
    func receiveTransferMessage(_ message: AppMessage, _ record: AppRecord, _ run: AppRun) -> String? {
        switch message {
        case .transferCreated(let transfer):
            return created(transfer, record, run)
        case .transferCancelled(let session, let task, let producingResumeData):
            // A transfer that already ended is delivered as it ended, as on iOS.
            guard let index = transferIndex(record, session, task), !transfers.records[index].isDone else { return nil }
            let id = transfers.records[index].id
            transfers.service?.stop(id)
            transfers.records[index].phase = .finished
            var result = WireTransferEvent(
                transfer: transfers.records[index].transfer, bytesReceived: transfers.records[index].bytesReceived,
                errorCode: WireTransfer.ErrorCode.cancelled, errorMessage: "cancelled")
            // cancel(byProducingResumeData:): the part file stays, named by the resume data.
            if producingResumeData == true, let data = resumeData(transfers.records[index]) {
                result.resumeData = data
            } else {
                transfers.fileRemovals.append(id)
            }
            transfers.records[index].result = result
            saveTransfers()
            announce(record, command: .transfer, "\(label(transfers.records[index])) cancelled by the app\(result.resumeData == nil ? "" : ", its part file kept for resume data")", nil)
            deliverTransfers(record)
            return nil
        case .transferDelivered(let session, let task):
            guard let index = transferIndex(record, session, task), transfers.records[index].phase == .finished,
                  transfers.deliveries.wasSent(transfers.records[index].id, to: run.id)
            else {
                return "it said task \(task) of background session \(session.cut(to: 64).debugDescription) was delivered, but the host delivered no such transfer to it"
            }
            transfers.deliveries.forget(transfers.records[index].id)
            // A download that ended with resume data keeps its part file until a task goes on from it.
            if transfers.records[index].result?.resumeData != nil {
                transfers.records[index].phase = .kept
                saveTransfers()
                announce(record, command: .transfer, "\(label(transfers.records[index])) delivered; its part file is kept for its resume data", nil)
                return nil
            }
            let done = transfers.records.remove(at: index)
            transfers.fileRemovals.append(done.id)
            saveTransfers()
            announce(record, command: .transfer, "\(label(done)) delivered", nil)
            return nil
        case .transferChallengeAnswered(let session, let task, let answer):
            return challengeAnswered(session, task, answer, record, run)
        default:
            return nil
        }
    }

    // MARK: Running

    /// Runs `reconsiderTransfers` and delivers what is owed once the current work on the queue
    /// is done (after a state change, an installation).
    func queueTransferPass() {
        guard !transfers.passQueued else { return }
        transfers.passQueued = true
        queue.async { [weak self] in
            guard let self else { return }
            transfers.passQueued = false
            reconsiderTransfers()
            // Only the apps that finished transfers are owed to.
            let owed = Set(transfers.records.filter(\.isOwed).map(\.app))
            for record in apps.records(identifiers: owed) { deliverTransfers(record) }
        }
    }

    /// What a transfer waits for under the host's conditions now; nil: nothing, it may run.
    func transferWaitsFor(_ record: TransferRecord) -> String? {
        if transfers.service == nil { return "a transfer service (this host was made without one)" }
        if let begin = record.transfer.earliestBegin, begin > scheduler.now {
            return "its earliest begin date, \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: begin)))"
        }
        if scheduler.conditions.network != .online { return "the network" }
        if record.transfer.isDiscretionary && scheduler.conditions.power != .plugged { return "external power (discretionary)" }
        if apps.record(identifier: record.app) == nil { return "its app to be installed" }
        return nil
    }

    /// Starts the transfers whose conditions hold and pauses those whose no longer do. Returns
    /// what it started, for the conditions line.
    @discardableResult
    func reconsiderTransfers() -> [String] {
        var started: [String] = []
        var measured: [String: TransferAllowance] = [:]
        for index in transfers.records.indices where !transfers.records[index].isDone {
            let record = transfers.records[index]
            guard !transfers.unkept.contains(record.id) else { continue }
            let waits = transferWaitsFor(record)
            switch (record.phase, waits) {
            case (.running, let reason?):
                transfers.service?.stop(record.id)
                transfers.records[index].phase = .waiting
                announceTransfer(record, "paused: waiting for \(reason)")
            case (.waiting, nil):
                startTransfer(at: index, measured: &measured)
                started.append("\(appName(record.app)) \(label(record))")
            default:
                break
            }
        }
        armBeginTimer()
        return started
    }

    /// Wakes the transfers at the earliest begin date still to come (on the scheduler's clock,
    /// which `advance` moves: it reconsiders them too).
    private func armBeginTimer() {
        let now = scheduler.now
        let dates = transfers.records.compactMap { $0.phase == .waiting ? $0.transfer.earliestBegin : nil }.filter { $0 > now }
        guard let next = dates.min(), transfers.beginArmed.map({ next < $0 }) ?? true else { return }
        transfers.beginArmed = next
        timers.after(.seconds(double: next - now)) { [weak self] in
            guard let self else { return }
            transfers.beginArmed = nil
            queueTransferPass()
        }
    }

    /// `measured`: the apps whose allowance this pass has set already (measuring walks the
    /// container and the app's files: once per app a pass, not once per transfer started).
    private func startTransfer(at index: Int, measured: inout [String: TransferAllowance]) {
        transfers.records[index].phase = .running
        let record = transfers.records[index]
        let file = record.transfer.kind == .download ? transfers.store.partFile(record.id) : transfers.store.bodyFile(record.id)
        let allowance = measured[record.app] ?? apps.first { $0.bundle.identifier == record.app }.map { transferAllowance(for: $0.bundle) }
        measured[record.app] = allowance
        var job = TransferJob(id: record.id, app: record.app, transfer: record.transfer, file: file, validator: record.validator, allowance: allowance)
        job.credential = transfers.credentials[record.id]
        job.challengeable = record.challengeDeclined != true
        let id = record.id
        transfers.service?.start(job) { [weak self] update in
            guard let self else { return }
            queue.async { self.transferUpdate(id, update) }
        }
        announceTransfer(record, "started")
    }

    private func transferUpdate(_ id: String, _ update: TransferUpdate) {
        guard let index = transfers.records.firstIndex(where: { $0.id == id }), transfers.records[index].phase == .running else { return }
        switch update {
        case .started(_, let expected, let validator, let resumedAt):
            transfers.records[index].bytesExpected = expected
            if transfers.records[index].transfer.kind == .download { transfers.records[index].validator = validator }
            transfers.records[index].bytesReceived = resumedAt
            if resumedAt > 0 {
                transfers.records[index].resumes += 1
                announceTransfer(transfers.records[index], "resumed at byte \(resumedAt) with a Range request")
                // The delegate's didResumeAtOffset, while the app runs.
                let record = transfers.records[index]
                if record.transfer.kind == .download, let app = apps.record(identifier: record.app), let run = app.run,
                   [.active, .inactive, .background].contains(run.machine.state) {
                    send(.transferProgress(
                        session: record.transfer.session, task: record.transfer.task, received: resumedAt, sent: 0,
                        expected: record.bytesExpected, resumedAt: resumedAt), app, run)
                }
            }
            saveTransfers()
        case .progress(let received, let sent):
            transfers.records[index].bytesReceived = received
            transfers.records[index].bytesSent = sent
            // The delegate's didWriteData and didSendBodyData, while the app runs (not suspended).
            let record = transfers.records[index]
            if let app = apps.first(where: { $0.bundle.identifier == record.app }), let run = app.run, [.active, .inactive, .background].contains(run.machine.state) {
                send(.transferProgress(
                    session: record.transfer.session, task: record.transfer.task, received: received, sent: sent,
                    expected: record.bytesExpected), app, run)
            }
        case .ended(let outcome):
            var record = transfers.records[index]
            record.phase = .finished
            switch outcome {
            case .completed(let status, let received, let sent, let body, let headers):
                record.bytesReceived = received
                record.bytesSent = sent
                record.result = WireTransferEvent(
                    transfer: record.transfer, statusCode: status, bytesReceived: received, bytesSent: sent, responseBody: body)
                record.result?.headers = headers.isEmpty ? nil : headers
                if record.transfer.kind == .upload { transfers.fileRemovals.append(record.id) }
            case .failed(let code, let message, let status):
                record.result = WireTransferEvent(
                    transfer: record.transfer, statusCode: status, bytesReceived: record.bytesReceived, bytesSent: record.bytesSent,
                    errorCode: code, errorMessage: message)
                // A download the connection failed (not the server's refusal, nor the storage
                // limit) keeps what it had, for its resume data, as on iOS.
                if [WireTransfer.ErrorCode.networkConnectionLost, WireTransfer.ErrorCode.timedOut].contains(code), let data = resumeData(record) {
                    record.result?.resumeData = data
                } else {
                    transfers.fileRemovals.append(record.id)
                }
            case .challenged(let method, let realm):
                transfers.records[index] = record
                return challenged(id, method: method, realm: realm)
            }
            record.result?.bytesExpected = record.bytesExpected
            transfers.records[index] = record
            saveTransfers()
            let result = record.result
            announceTransfer(record, result?.errorCode == nil
                ? "finished: HTTP \(result?.statusCode ?? 0), \(record.bytesReceived) bytes received, \(record.bytesSent) sent"
                : "failed: \(result?.errorMessage ?? "") (URLError \(result?.errorCode ?? 0))")
            if let app = apps.first(where: { $0.bundle.identifier == record.app }) { deliverTransfers(app) }
        }
    }

    // MARK: Listings

    /// Every transfer the host keeps, for `transfers`.
    public func transferListing() -> [TransferListing] {
        let (listed, store) = queue.sync { (transfers.records.map(listing), transfers.store) }
        // Answered once what it lists is on the disk, and the files of what it no longer lists
        // are gone (the store's writer, not the loop, waits).
        store.flush()
        return listed
    }

    func listing(_ record: TransferRecord) -> TransferListing {
        let state: String
        var waitingFor: String?
        switch record.phase {
        case .waiting:
            state = "waiting"
            waitingFor = transferWaitsFor(record) ?? "its turn"
        case .running:
            state = "running"
        case .finished:
            state = record.result?.errorCode == nil ? "finished" : "failed"
            waitingFor = "delivery to the app"
        case .challenged:
            state = "challenged"
            waitingFor = "the app's answer to an authentication challenge"
        case .kept:
            state = "kept"
            waitingFor = "a download that goes on from its resume data"
        }
        return TransferListing(
            app: record.app, name: appName(record.app), session: record.transfer.session, task: record.transfer.task,
            kind: record.transfer.kind.rawValue, url: record.transfer.url,
            bytesDone: record.transfer.kind == .download ? record.bytesReceived : record.bytesSent,
            bytesExpected: record.bytesExpected, state: state, waitingFor: waitingFor, discretionary: record.transfer.isDiscretionary,
            resumes: record.resumes)
    }

    /// The app's transfers, for `ps` and its report.
    func transferListing(of bundleIdentifier: String) -> [TransferListing] {
        transfers.records.filter { $0.app == bundleIdentifier }.map(listing)
    }

    // MARK: Helpers

    /// Hands what changed in the records to the store, which writes it off the loop; `then`
    /// runs on the loop once it is on the disk.
    func saveTransfers(then: (@Sendable () -> Void)? = nil) {
        transfers.store.write(transfers.changes(), removingFilesOf: transfers.fileRemovals, then: onTheLoop(then))
        transfers.fileRemovals = []
    }

    func transferIndex(_ record: AppRecord, _ session: String, _ task: Int) -> Int? {
        transfers.records.firstIndex { $0.app == record.bundle.identifier && $0.transfer.session == session && $0.transfer.task == task }
    }

    func appName(_ identifier: String) -> String {
        apps.first { $0.bundle.identifier == identifier }?.bundle.name ?? identifier
    }

    /// "download task 1 of session com.example.episodes (http://…)".
    func label(_ record: TransferRecord) -> String {
        "\(record.transfer.kind.rawValue) task \(record.transfer.task) of session \(record.transfer.session) (\(record.transfer.url))"
    }

    func announceTransfer(_ record: TransferRecord, _ what: String) {
        if let app = apps.first(where: { $0.bundle.identifier == record.app }) {
            announce(app, command: .transfer, "\(label(record)) \(what)", nil)
        } else {
            publish(HostEvent(time: Date(), event: .transfer, detail: "\(record.app): \(label(record)) \(what)"), run: nil)
        }
    }
}
