#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

// Delivering finished background transfers (docs/transfers.md, "Background transfers"): at once to a
// running app, else by waking it for handleEventsForBackgroundURLSession; a download's file moved
// into the app's container as it is sent; a force-quit app's transfers cancelled.
extension Transfers {
    /// Hands the app its finished transfers (and its challenges): at once while it runs; else,
    /// for each session that sends launch events, a wake (resumes or launches it in the
    /// background for `handleEventsForBackgroundURLSession`), at most
    /// `TransferDeliveries.maximumWakes` times for a transfer the wakes did not deliver.
    mutating func deliver(to app: TransferDesk.App, _ facts: TransferDesk.Facts) -> [Effect] {
        let id = app.identifier
        let owed = records.filter { $0.app == id && $0.isOwed }
        // The force-quit gate: nothing reaches a force-quit app before the user opens it.
        guard !owed.isEmpty, !app.forceQuit else { return [] }
        if let run = app.run, run.isLive, !run.isEnding {
            // A launching app gets them once its launch is over (the pass after its state
            // changes: active, or the background), directly: not by a wake-up, which would wait
            // for the background. Not between didFinishLaunching and the activation that follows.
            guard run.launchFinished, !run.justLaunched else { return [] }
            // Sent at once to an app that runs and will go on running. One in the background
            // that is about to be suspended would not run the delegate before its resume: it is
            // woken for them (handleEventsForBackgroundURLSession, with the time that gives).
            if run.hearsProgress, run.keptRunning {
                var effects: [Effect] = []
                // A session whose wake-up is on its way gets its transfers with handleEvents.
                for transfer in owed where !deliveries.wasSent(transfer.id, to: run.id)
                    && !deliveries.isWaking(.init(app: id, name: transfer.transfer.session)) {
                    guard let event = prepareDelivery(transfer.id, app, run.id) else { continue }
                    effects += [.send(.transferFinished(event), app: id, run: run.id), Self.announce(transfer, "sent to the running app")]
                }
                return effects
            }
        }
        guard !facts.shuttingDown else { return [] }
        // A wake-up whose run ended before its callback was sent is owed again.
        if app.run?.isAlive != true { deliveries.appNotRunning(id) }
        return deliveries.sessionsToWake(app: id, owed: owed, run: app.run?.id).map { .wake(app: id, session: $0) }
    }

    /// The finished transfers of the session, for the `handleEventsForBackgroundURLSession`
    /// being sent to the app's run (the loop adds them to the callback as it sends it).
    mutating func events(forWakeOf session: String, _ app: TransferDesk.App) -> [WireTransferEvent] {
        guard let run = app.run else { return [] }
        deliveries.woke(.init(app: app.identifier, name: session))
        return records.filter { $0.app == app.identifier && $0.isOwed && $0.transfer.session == session }
            .compactMap { deliveries.wasSent($0.id, to: run.id) ? nil : prepareDelivery($0.id, app, run.id) }
    }

    /// The event to send for a finished transfer; a download's file is moved into the app's
    /// `tmp` first. Marks it sent to the run.
    private mutating func prepareDelivery(_ id: String, _ app: TransferDesk.App, _ run: RunID) -> WireTransferEvent? {
        guard let index = index(id), var event = records[index].result else { return nil }
        event.id = id
        if event.errorCode == nil, event.challenge == nil, event.transfer.kind == .download {
            do {
                event.location = try Self.placeDownload(id, from: store.partFile(id).path, container: app.container)
            } catch {
                event.errorCode = WireTransfer.ErrorCode.cannotConnectToHost
                event.errorMessage = "the host could not put the download in the app's container: \(error)"
            }
            records[index].result = event
            save()
        }
        deliveries.sent(id, to: run)
        return event
    }

    /// Cancels every unfinished transfer of the app (a force quit), as iOS does: each ends with
    /// `URLError.cancelled` and `NSURLErrorBackgroundTaskCancelledReasonKey` = `reasonCode`, and
    /// is delivered when the app next runs and makes its session again (the user opens it: a
    /// force-quit app is not launched in the background). Finished ones wait for it as they were.
    mutating func cancelAll(of app: String, because reason: String, reasonCode: Int) -> [Effect] {
        let cancelled = records.indices.filter { records[$0].app == app && ![.finished, .kept].contains(records[$0].phase) }
        guard !cancelled.isEmpty else { return [] }
        var effects: [Effect] = []
        for index in cancelled {
            let transfer = records[index]
            effects.append(.stop(transfer.id))
            fileRemovals.append(transfer.id)
            unkept.remove(transfer.id)
            deliveries.forget(transfer.id)
            records[index].phase = .finished
            records[index].result = WireTransferEvent(
                transfer: transfer.transfer, bytesReceived: transfer.bytesReceived, bytesSent: transfer.bytesSent,
                errorCode: WireTransfer.ErrorCode.cancelled, errorMessage: "cancelled: \(reason)", cancelledReason: reasonCode)
        }
        deliveries.appNotRunning(app)
        save()
        return effects + [.announce(app: app, "cancelled \(cancelled.count) background transfer\(cancelled.count == 1 ? "" : "s"): \(reason)")]
    }

    /// Moves a finished download into the container's tmp (never through a link), owned by the
    /// container's owner; returns its path. A download already moved there is found again.
    static func placeDownload(_ id: String, from part: String, container: String) throws -> String {
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
}

struct TransferPlacementError: Error, CustomStringConvertible {
    var description: String
}
