#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem
import AppHostSandbox

// A background transfer's creation (README.md, "Background transfers"): what refuses it, what
// an upload's body costs the app's storage, and when it is kept and said to be created.
extension Supervisor {
    /// `transferCreated`: the transfer checked, refused with its reason, or kept; returns a
    /// violation, if any.
    func created(_ transfer: WireTransfer, _ record: AppRecord, _ run: AppRun) -> String? {
        let limits = Self.transferLimits
        guard !transfer.session.isEmpty, transfer.session.utf8.count <= limits.session, transfer.task > 0,
              transfer.url.utf8.count <= limits.url, (transfer.file?.utf8.count ?? 0) <= limits.file,
              (transfer.taskDescription?.utf8.count ?? 0) <= limits.description,
              transfer.method.map({ !$0.isEmpty && $0.count <= 16 && $0.allSatisfy { $0.isASCII && $0.isUppercase } }) ?? true
        else {
            return "it sent a background transfer that is out of bounds (session 1-\(limits.session) bytes, task above 0, URL at most \(limits.url) bytes, method in capitals)"
        }
        if transferIndex(record, transfer.session, transfer.task) != nil {
            return "it created task \(transfer.task) of background session \(transfer.session.debugDescription) twice"
        }
        let container = storage.containerPath(.app(record.bundle.identifier))
        let id = UUID().uuidString.lowercased()
        var body: UploadBody?
        var problem = Self.transferProblem(transfer, of: record.bundle, container: container)
        if problem == nil, transfers.records.count(where: { $0.app == record.bundle.identifier }) >= Self.maximumTransfersPerApp {
            problem = (WireTransfer.ErrorCode.cannotConnectToHost, "the app has \(Self.maximumTransfersPerApp) background transfers already; the host takes no more")
        }
        // downloadTask(withResumeData:): the part file the host kept for this app's download of
        // the same URL goes on under the new task. The download it names may not be
        // acknowledged yet (the app makes the new task in its callbacks for the old one).
        var resumed: TransferRecord?
        if problem == nil, let data = transfer.resumeData {
            let resume = WireResumeData(data)
            resumed = transfers.records.first {
                $0.id == resume?.transfer && $0.app == record.bundle.identifier && $0.transfer.url == transfer.url
                    && ($0.phase == .kept || ($0.phase == .finished && $0.result?.resumeData != nil))
            }
            if transfer.kind != .download || resumed == nil {
                problem = (WireTransfer.ErrorCode.cannotDecodeRawData, "its resume data names no download of this URL whose part file the host keeps for the app")
            }
        }
        if problem == nil, transfer.kind == .upload, let file = transfer.file {
            switch UploadBody.open(file, container: container) {
            case .success(let opened):
                let allowance = transferAllowance(for: record.bundle)
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
            announce(record, command: .transfer, "refused \(transfer.kind.rawValue) task \(transfer.task) of session \(transfer.session): \(problem.message)", nil)
            send(.transferFinished(WireTransferEvent(transfer: transfer, errorCode: problem.code, errorMessage: problem.message)), record, run)
            return nil
        }
        var kept = TransferRecord(id: id, app: record.bundle.identifier, transfer: transfer, created: Date())
        if let resumed, rename(transfers.store.partFile(resumed.id).path, transfers.store.partFile(id).path) == 0 {
            kept.validator = resumed.validator
            kept.bytesReceived = resumed.bytesReceived
            kept.bytesExpected = resumed.bytesExpected
            if resumed.phase == .kept {
                transfers.records.removeAll { $0.id == resumed.id }
            } else if let index = transfers.records.firstIndex(where: { $0.id == resumed.id }) {
                // Its acknowledgement removes it: its part file is the new task's now.
                transfers.records[index].result?.resumeData = nil
            }
        }
        transfers.records.append(kept)
        // Said to be created, and started, once it is on the disk: a host killed at any moment
        // never announced a transfer it then lost, nor ran one it did not keep.
        transfers.unkept.insert(id)
        guard let body else {
            keepCreated(id, record)
            return nil
        }
        // An upload's body is copied off the loop, file to file (never whole into memory); its
        // record is kept once the copy is whole.
        transfers.copying.insert(id)
        let destination = transfers.store.bodyFile(id)
        DispatchQueue.global(qos: .utility).async { [weak self] in
            let failure = body.copy(to: destination)
            self?.queue.async { [weak self] in
                guard let self else { return }
                transfers.copying.remove(id)
                guard let index = transfers.records.firstIndex(where: { $0.id == id }) else { return }
                if let failure {
                    transfers.unkept.remove(id)
                    transfers.records[index].phase = .finished
                    transfers.records[index].result = WireTransferEvent(
                        transfer: transfer, errorCode: WireTransfer.ErrorCode.noPermissionsToReadFile, errorMessage: failure)
                    transfers.fileRemovals.append(id)
                    saveTransfers()
                    announce(record, command: .transfer, "\(label(transfers.records[index])) failed: \(failure)", nil)
                    deliverTransfers(record)
                } else {
                    keepCreated(id, record)
                }
            }
        }
        return nil
    }

    /// Saves a transfer just created; once it is on the disk, says so and lets it start.
    private func keepCreated(_ id: String, _ record: AppRecord) {
        saveTransfers { [weak self] in
            guard let self else { return }
            transfers.unkept.remove(id)
            guard let kept = transfers.records.first(where: { $0.id == id }) else { return }
            // One the app cancelled meanwhile was said cancelled: not created after that.
            if kept.phase != .finished {
                announce(record, command: .transfer, "\(label(kept)) created\(kept.transfer.isDiscretionary ? " (discretionary)" : "")", nil)
            }
            reconsiderTransfers()
        }
    }

    /// What refuses a transfer at its creation, if anything: a URL or a path that is not one
    /// (TransferRules), or an app without the network entitlement its own request would need.
    static func transferProblem(_ transfer: WireTransfer, of bundle: AppBundle, container: String) -> (code: Int, message: String)? {
        let headers = transfer.headers ?? [:]
        let words = [transfer.session, transfer.url, transfer.file ?? "", transfer.taskDescription ?? ""] + headers.keys + headers.values
        if words.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) {
            return (WireTransfer.ErrorCode.badURL, "its URL, session name, file, description or a header field holds a control character")
        }
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard headers.count <= Self.transferLimits.headers, headers.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) <= Self.transferLimits.headerBytes,
              headers.keys.allSatisfy({ !$0.isEmpty && $0.allSatisfy(token.contains) })
        else {
            return (WireTransfer.ErrorCode.badURL, "its header fields are not HTTP's (at most \(Self.transferLimits.headers) fields of \(Self.transferLimits.headerBytes) bytes in all, names of letters, digits and !#$%&'*+-.^_`|~)")
        }
        if let problem = transfer.problem(container: container) { return problem }
        guard bundle.entitlements.contains(SyscallProfile.Entitlement.networkClient.rawValue) else {
            return (WireTransfer.ErrorCode.cannotConnectToHost,
                    "the app lacks the network entitlement a background transfer needs, as its own connection would (com.apple.security.network.client in AppHostEntitlements)")
        }
        return nil
    }

    /// What the app's transfers may still write: its storage limit less what its container and
    /// its transfers' files hold now. One per app, set afresh at each use.
    func transferAllowance(for bundle: AppBundle) -> TransferAllowance {
        let part = storage.usage(.app(bundle.identifier))
        let limit = part.limitBytes ?? configuration.policy.storageLimit
        let files = transfers.records.filter { $0.app == bundle.identifier }.reduce(Int64(0)) { $0 + transfers.store.fileBytes($1.id) }
        let remaining = Int64(clamping: limit) - Int64(clamping: part.bytes) - files
        if let allowance = transfers.allowances[bundle.identifier], allowance.limit == limit {
            allowance.reset(remaining)
            return allowance
        }
        let allowance = TransferAllowance(remaining: remaining, limit: limit)
        transfers.allowances[bundle.identifier] = allowance
        return allowance
    }
}
