#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

// Delivering finished background transfers (README.md, "Background transfers"): at once to a
// running app, else by waking it for handleEventsForBackgroundURLSession; a download's file moved
// into the app's container as it is sent; a force-quit app's transfers cancelled.
extension Supervisor {
    // MARK: Delivering

    /// Hands the app its finished transfers: at once while it runs; else, for each session that
    /// sends launch events, resumes or launches it in the background (launch reason
    /// `backgroundURLSession`) for `handleEventsForBackgroundURLSession`.
    func deliverTransfers(_ record: AppRecord) {
        let id = record.bundle.identifier
        let owed = transfers.records.filter { $0.app == id && $0.isOwed }
        guard !owed.isEmpty, !scheduler.isForceQuit(id) else { return }
        if let run = record.run, run.machine.isLive, !run.machine.isEnding {
            // A launching app gets them once its launch is over (the pass after its state
            // changes: active, or the background), directly: not by a wake-up, which would wait
            // for the background. Not between didFinishLaunching and the activation that follows.
            guard run.machine.launchFinished, run.machine.phase != .launched else { return }
            // Sent at once to an app that runs and will go on running: in the foreground, or in
            // the background with a task open or a mode holding it. One in the background with
            // neither is about to be suspended: the delegate would not run before its resume, so
            // it is woken for them (handleEventsForBackgroundURLSession, with the time that gives).
            let keptRunning = run.machine.isInForeground || !run.machine.openTasks.isEmpty || !run.machine.holds.isEmpty
            if [.active, .inactive, .background].contains(run.machine.state), keptRunning {
                // A session whose wake-up is on its way gets its transfers with handleEvents.
                for transfer in owed where !transfers.deliveries.wasSent(transfer.id, to: run.id)
                    && !transfers.deliveries.isWaking(.init(app: id, name: transfer.transfer.session)) {
                    guard let event = prepareDelivery(transfer.id, record, run) else { continue }
                    send(.transferFinished(event), record, run)
                    announceTransfer(transfer, "sent to the running app")
                }
                return
            }
        }
        guard !waiters.isShuttingDown else { return }
        // A wake-up whose run ended before its callback was sent is owed again.
        if record.run?.machine.isAlive != true { transfers.deliveries.appNotRunning(id) }
        for session in transfers.deliveries.sessionsToWake(app: id, owed: owed, run: record.run?.id) {
            let how = deliver(BackgroundEvent(kind: .backgroundURLSession, urlSession: session), reason: "backgroundURLSession", to: record)
            announce(record, command: .transfer, "background URLSession \(session): its transfers finished", how)
        }
    }

    /// The finished transfers of the callback's session, for `handleEventsForBackgroundURLSession`
    /// (the loop adds them to the callback as it sends it).
    func transferEvents(for event: WireBackgroundEvent?, _ record: AppRecord, _ run: AppRun) -> [WireTransferEvent] {
        guard let session = event?.urlSession else { return [] }
        let id = record.bundle.identifier
        transfers.deliveries.woke(.init(app: id, name: session))
        return transfers.records.filter { $0.app == id && $0.isOwed && $0.transfer.session == session }
            .compactMap { transfers.deliveries.wasSent($0.id, to: run.id) ? nil : prepareDelivery($0.id, record, run) }
    }

    /// The event to send for a finished transfer; a download's file is moved into the app's
    /// `tmp` first. Marks it sent to this run.
    private func prepareDelivery(_ id: String, _ record: AppRecord, _ run: AppRun) -> WireTransferEvent? {
        guard let index = transfers.records.firstIndex(where: { $0.id == id }), var event = transfers.records[index].result else { return nil }
        event.id = id
        if event.errorCode == nil, event.challenge == nil, event.transfer.kind == .download {
            do {
                event.location = try placeDownload(id, container: storage.containerPath(.app(record.bundle.identifier)))
            } catch {
                event.errorCode = WireTransfer.ErrorCode.cannotConnectToHost
                event.errorMessage = "the host could not put the download in the app's container: \(error)"
            }
            transfers.records[index].result = event
            saveTransfers()
        }
        transfers.deliveries.sent(id, to: run.id)
        return event
    }

    /// Moves a finished download into the container's tmp (never through a link), owned by the
    /// container's owner; returns its path. A download already moved there is found again.
    private func placeDownload(_ id: String, container: String) throws -> String {
        let name = "CFNetworkDownload_\(id).tmp"
        let location = container + "/tmp/" + name
        let containerFD = try valueOrErrno("open \(container)") { Glibc.open(container, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { close(containerFD) }
        if mkdirat(containerFD, "tmp", 0o700) == 0 {
            var owner = stat()
            fstat(containerFD, &owner)
            fchownat(containerFD, "tmp", owner.st_uid, owner.st_gid, AT_SYMLINK_NOFOLLOW)
        }
        let tmpFD = try valueOrErrno("open \(container)/tmp") { openat(containerFD, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { close(tmpFD) }
        var owner = stat()
        fstat(tmpFD, &owner)
        let part = transfers.store.partFile(id).path
        guard access(part, F_OK) == 0 else {
            var placed = stat()
            if fstatat(tmpFD, name, &placed, AT_SYMLINK_NOFOLLOW) == 0, (placed.st_mode & S_IFMT) == S_IFREG { return location }
            throw TransferPlacementError(description: "its part file is gone")
        }
        if renameat(AT_FDCWD, part, tmpFD, name) != 0 {
            guard errno == EXDEV else { throw TransferPlacementError(description: "rename: \(errnoText(errno))") }
            // The container is a file system of its own: copy, then remove the part file.
            let output = try valueOrErrno("create \(location)") {
                openat(tmpFD, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
            }
            defer { close(output) }
            let input = try valueOrErrno("open \(part)") { Glibc.open(part, O_RDONLY | O_CLOEXEC) }
            defer { close(input) }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = try valueOrErrno("read \(part)") { read(input, &buffer, buffer.count) }
                if count == 0 { break }
                try writeAll(output, Array(buffer[0..<count]), call: "write \(location)")
            }
            unlink(part)
        }
        fchownat(tmpFD, name, owner.st_uid, owner.st_gid, AT_SYMLINK_NOFOLLOW)
        return location
    }

    /// Cancels every unfinished transfer of the app (a force quit), as iOS does: each ends with
    /// `URLError.cancelled` and `NSURLErrorBackgroundTaskCancelledReasonKey` = `reasonCode`, and
    /// is delivered when the app next runs and makes its session again (the user opens it: a
    /// force-quit app is not launched in the background). Finished ones wait for it as they were.
    func cancelTransfers(of record: AppRecord, because reason: String, reasonCode: Int) {
        let id = record.bundle.identifier
        let cancelled = transfers.records.indices.filter { transfers.records[$0].app == id && ![.finished, .kept].contains(transfers.records[$0].phase) }
        guard !cancelled.isEmpty else { return }
        for index in cancelled {
            let transfer = transfers.records[index]
            transfers.service?.stop(transfer.id)
            transfers.fileRemovals.append(transfer.id)
            transfers.unkept.remove(transfer.id)
            transfers.deliveries.forget(transfer.id)
            transfers.records[index].phase = .finished
            transfers.records[index].result = WireTransferEvent(
                transfer: transfer.transfer, bytesReceived: transfer.bytesReceived, bytesSent: transfer.bytesSent,
                errorCode: WireTransfer.ErrorCode.cancelled, errorMessage: "cancelled: \(reason)", cancelledReason: reasonCode)
        }
        transfers.deliveries.appNotRunning(id)
        saveTransfers()
        announce(record, command: .transfer, "cancelled \(cancelled.count) background transfer\(cancelled.count == 1 ? "" : "s"): \(reason)", nil)
    }
}

struct TransferPlacementError: Error, CustomStringConvertible {
    var description: String
}
