#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol

// What an app says of its background transfers (docs/transfers.md, "Background transfers"): a task
// created (checked, refused with its reason, or kept), cancelled, or delivered.
extension Transfers {
    /// `transferCreated`, `transferCancelled`, `transferDelivered`, `transferChallengeAnswered`
    /// from the app's run; returns a violation, if any.
    mutating func receive(
        _ message: AppMessage, from app: TransferDesk.App, networkEntitled: Bool, _ facts: TransferDesk.Facts
    ) -> (violation: String?, effects: [Effect]) {
        guard let run = app.run else { return (nil, []) }
        switch message {
        case .transferCreated(let transfer):
            return created(transfer, app, run.id, networkEntitled: networkEntitled, facts)
        case .transferCancelled(let session, let task, let producingResumeData):
            // A transfer that already ended is delivered as it ended, as on iOS.
            guard let index = index(app: app.identifier, session: session, task: task), !records[index].isDone else { return (nil, []) }
            let id = records[index].id
            records[index].phase = .finished
            var result = WireTransferEvent(
                transfer: records[index].transfer, bytesReceived: records[index].bytesReceived,
                errorCode: WireTransfer.ErrorCode.cancelled, errorMessage: "cancelled")
            // cancel(byProducingResumeData:): the part file stays, named by the resume data.
            if producingResumeData == true, let data = resumeData(records[index]) {
                result.resumeData = data
            } else {
                fileRemovals.append(id)
            }
            records[index].result = result
            save()
            let said = Self.announce(
                records[index], "cancelled by the app\(result.resumeData == nil ? "" : ", its part file kept for resume data")")
            return (nil, [.stop(id), said] + deliver(to: app, facts))
        case .transferDelivered(let session, let task):
            guard let index = index(app: app.identifier, session: session, task: task), records[index].phase == .finished,
                  deliveries.wasSent(records[index].id, to: run.id)
            else {
                return ("it said task \(task) of background session \(session.cut(to: 64).debugDescription) was delivered, but the host delivered no such transfer to it", [])
            }
            deliveries.forget(records[index].id)
            // A download that ended with resume data keeps its part file until a task goes on from it.
            if records[index].result?.resumeData != nil {
                records[index].phase = .kept
                save()
                return (nil, [Self.announce(records[index], "delivered; its part file is kept for its resume data")])
            }
            let done = records.remove(at: index)
            fileRemovals.append(done.id)
            save()
            return (nil, [Self.announce(done, "delivered")])
        case .transferChallengeAnswered(let session, let task, let answer):
            return challengeAnswered(session, task, answer, app, run.id, facts)
        default:
            return (nil, [])
        }
    }

    /// `transferCreated`: the transfer checked, refused with its reason, or kept; returns a
    /// violation, if any.
    private mutating func created(
        _ transfer: WireTransfer, _ app: TransferDesk.App, _ run: RunID, networkEntitled: Bool, _ facts: TransferDesk.Facts
    ) -> (violation: String?, effects: [Effect]) {
        let limits = Self.limits
        guard !transfer.session.isEmpty, transfer.session.utf8.count <= limits.session, transfer.task > 0,
              transfer.url.utf8.count <= limits.url, (transfer.file?.utf8.count ?? 0) <= limits.file,
              (transfer.taskDescription?.utf8.count ?? 0) <= limits.description,
              transfer.method.map({ !$0.isEmpty && $0.count <= 16 && $0.allSatisfy { $0.isASCII && $0.isUppercase } }) ?? true
        else {
            return ("it sent a background transfer that is out of bounds (session 1-\(limits.session) bytes, task above 0, URL at most \(limits.url) bytes, method in capitals)", [])
        }
        if index(app: app.identifier, session: transfer.session, task: transfer.task) != nil {
            return ("it created task \(transfer.task) of background session \(transfer.session.debugDescription) twice", [])
        }
        let id = UUID().uuidString.lowercased()
        var body: UploadBody?
        var problem = Self.problem(transfer, networkEntitled: networkEntitled, container: app.container)
        if problem == nil, records.count(where: { $0.app == app.identifier }) >= Self.maximumPerApp {
            problem = (WireTransfer.ErrorCode.cannotConnectToHost, "the app has \(Self.maximumPerApp) background transfers already; the host takes no more")
        }
        // downloadTask(withResumeData:): the part file the host kept for this app's download of
        // the same URL goes on under the new task. The download it names may not be
        // acknowledged yet (the app makes the new task in its callbacks for the old one).
        var resumed: TransferRecord?
        if problem == nil, let data = transfer.resumeData {
            let resume = WireResumeData(data)
            resumed = records.first {
                $0.id == resume?.transfer && $0.app == app.identifier && $0.transfer.url == transfer.url
                    && ($0.phase == .kept || ($0.phase == .finished && $0.result?.resumeData != nil))
            }
            if transfer.kind != .download || resumed == nil {
                problem = (WireTransfer.ErrorCode.cannotDecodeRawData, "its resume data names no download of this URL whose part file the host keeps for the app")
            }
        }
        if problem == nil, transfer.kind == .upload, let file = transfer.file {
            switch UploadBody.open(file, container: app.container) {
            case .success(let opened):
                let allowance = allowance(for: app.identifier, facts)
                if allowance.take(opened.size) {
                    body = opened
                } else {
                    opened.close()
                    problem = (WireTransfer.ErrorCode.cannotWriteToFile,
                               "the upload's body (\(UInt64(opened.size).mebibytes)) would take the app past its storage limit of \(allowance.limit.mebibytes) (the host keeps a copy until it is sent)")
                }
            case .failure(let failure):
                problem = (failure.code, failure.message)
            }
        }
        if let problem {
            // Refused before anything was kept: the delegate hears why, and nothing is half-done.
            return (nil, [
                .announce(app: app.identifier, "refused \(transfer.kind.rawValue) task \(transfer.task) of session \(transfer.session): \(problem.message)"),
                .send(.transferFinished(WireTransferEvent(transfer: transfer, errorCode: problem.code, errorMessage: problem.message)), app: app.identifier, run: run),
            ])
        }
        var kept = TransferRecord(id: id, app: app.identifier, transfer: transfer, created: Date())
        if let resumed, rename(store.partFile(resumed.id).path, store.partFile(id).path) == 0 {
            kept.validator = resumed.validator
            kept.bytesReceived = resumed.bytesReceived
            kept.bytesExpected = resumed.bytesExpected
            if resumed.phase == .kept {
                records.removeAll { $0.id == resumed.id }
            } else if let index = index(resumed.id) {
                // Its acknowledgement removes it: its part file is the new task's now.
                records[index].result?.resumeData = nil
            }
        }
        records.append(kept)
        // Said to be created, and started, once it is on the disk: a host killed at any moment
        // never announced a transfer it then lost, nor ran one it did not keep.
        unkept.insert(id)
        guard let body else { return (nil, keep(id)) }
        // An upload's body is copied off the loop, file to file (never whole into memory); its
        // record is kept once the copy is whole.
        copying.insert(id)
        return (nil, [.copyBody(transfer: id, body, to: store.bodyFile(id))])
    }

    /// Saves a transfer just created; `kept` follows once it is on the disk.
    private mutating func keep(_ id: String) -> [Effect] {
        save()
        return [.whenSaved(created: id)]
    }

    /// An upload's body was copied into the store (`failure`: why not).
    mutating func bodyCopied(_ id: String, failure: String?, _ facts: TransferDesk.Facts) -> [Effect] {
        copying.remove(id)
        guard let index = index(id) else { return [] }
        guard let failure else { return keep(id) }
        unkept.remove(id)
        records[index].phase = .finished
        records[index].result = WireTransferEvent(
            transfer: records[index].transfer, errorCode: WireTransfer.ErrorCode.noPermissionsToReadFile, errorMessage: failure)
        fileRemovals.append(id)
        save()
        let record = records[index]
        return [Self.announce(record, "failed: \(failure)")] + (facts.app(record.app).map { deliver(to: $0, facts) } ?? [])
    }

    /// A transfer just created is on the disk: it is said created and may start.
    mutating func kept(_ id: String, _ facts: TransferDesk.Facts) -> [Effect] {
        unkept.remove(id)
        guard let kept = records.first(where: { $0.id == id }) else { return [] }
        // One the app cancelled meanwhile was said cancelled: not created after that.
        let said = kept.phase == .finished ? [] : [Self.announce(kept, "created\(kept.transfer.isDiscretionary ? " (discretionary)" : "")")]
        return said + reconsider(facts).effects
    }

    /// What refuses a transfer at its creation, if anything: a URL or a path that is not one
    /// (TransferRules), or an app without the network entitlement its own request would need.
    static func problem(_ transfer: WireTransfer, networkEntitled: Bool, container: String) -> (code: Int, message: String)? {
        let headers = transfer.headers ?? [:]
        let words = [transfer.session, transfer.url, transfer.file ?? "", transfer.taskDescription ?? ""] + headers.keys + headers.values
        if words.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) {
            return (WireTransfer.ErrorCode.badURL, "its URL, session name, file, description or a header field holds a control character")
        }
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard headers.count <= limits.headers, headers.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) <= limits.headerBytes,
              headers.keys.allSatisfy({ !$0.isEmpty && $0.allSatisfy(token.contains) })
        else {
            return (WireTransfer.ErrorCode.badURL, "its header fields are not HTTP's (at most \(limits.headers) fields of \(limits.headerBytes) bytes in all, names of letters, digits and !#$%&'*+-.^_`|~)")
        }
        if let problem = transfer.problem(container: container) { return problem }
        guard networkEntitled else {
            return (WireTransfer.ErrorCode.cannotConnectToHost,
                    "the app lacks the network entitlement a background transfer needs, as its own connection would (com.apple.security.network.client in AppHostEntitlements)")
        }
        return nil
    }
}
