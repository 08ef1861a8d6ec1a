import Foundation
import AppHostProtocol

// What a background transfer asks of its app besides its end (README.md, "Background
// transfers"): a server's challenge (a 401 with `WWW-Authenticate`, Basic or Digest), which
// wakes or launches the app as a finished transfer does and goes on with its answer; and a
// download's resume data, which names the part file the host keeps for it.
extension Supervisor {
    /// Challenges a transfer asks its app to answer before the host stops asking: a server
    /// that refuses every credential ends with its 401 as the response.
    static let maximumFailedCredentials = 5

    /// The attempt ended on a challenge: answered with the credential the host kept for the
    /// protection space if it has one not yet tried, else the app is asked.
    func challenged(_ id: String, method: WireChallenge.Method, realm: String?) {
        guard let index = transfers.records.firstIndex(where: { $0.id == id }) else { return }
        let record = transfers.records[index]
        let space = credentialSpace(record, method: method, realm: realm)
        let tried = transfers.credentials[id]
        if tried == nil, let kept = transfers.credentialStore.credential(for: space) {
            transfers.credentials[id] = kept
            transfers.records[index].phase = .waiting
            saveTransfers()
            announceTransfer(record, "answered its server's challenge with the credential kept for \(describe(space))")
            queueTransferPass()
            return
        }
        if let tried {
            transfers.records[index].failedCredentials = (record.failedCredentials ?? 0) + 1
            if transfers.credentialStore.credential(for: space) == tried { transfers.credentialStore.forget(space) }
        }
        if (transfers.records[index].failedCredentials ?? 0) >= Self.maximumFailedCredentials {
            return decline(index, "its server refused \(Self.maximumFailedCredentials) credentials: the 401 is the response")
        }
        transfers.records[index].phase = .challenged
        transfers.records[index].result = WireTransferEvent(
            transfer: record.transfer, statusCode: 401, bytesReceived: record.bytesReceived, bytesSent: record.bytesSent,
            challenge: WireChallenge(
                method: method, host: space.host, port: space.port, protocol: space.protocol, realm: realm,
                previousFailureCount: transfers.records[index].failedCredentials ?? 0))
        saveTransfers()
        announceTransfer(record, "asks for authentication (\(describe(space))): the app is asked")
        if let app = apps.first(where: { $0.bundle.identifier == record.app }) { deliverTransfers(app) }
    }

    /// `transferChallengeAnswered`: the transfer goes on with the app's answer; returns a
    /// violation, if any.
    func challengeAnswered(_ session: String, _ task: Int, _ answer: WireChallengeAnswer, _ record: AppRecord, _ run: AppRun) -> String? {
        guard let index = transferIndex(record, session, task), transfers.records[index].phase == .challenged,
              let challenge = transfers.records[index].result?.challenge,
              transfers.deliveries.wasSent(transfers.records[index].id, to: run.id)
        else {
            return "it answered a challenge of task \(task) of background session \(session.cut(to: 64).debugDescription) that the host did not ask it"
        }
        guard (answer.user?.utf8.count ?? 0) <= 1024, (answer.password?.utf8.count ?? 0) <= 1024 else {
            return "it answered a challenge with a user name or password over 1024 bytes"
        }
        let id = transfers.records[index].id
        transfers.deliveries.forget(id)
        transfers.records[index].result = nil
        switch answer.disposition {
        case .useCredential where answer.user != nil:
            let credential = TransferCredential(user: answer.user ?? "", password: answer.password ?? "", method: challenge.method)
            transfers.credentials[id] = credential
            let space = credentialSpace(transfers.records[index], method: challenge.method, realm: challenge.realm)
            let permanent = answer.persistence == .permanent || answer.persistence == .synchronizable
            if permanent { transfers.credentialStore.keep(credential, for: space) }
            transfers.records[index].phase = .waiting
            announceTransfer(transfers.records[index], "goes on with the app's credential\(permanent ? ", kept for \(describe(space))" : "")")
        case .cancelAuthenticationChallenge:
            transfers.records[index].phase = .finished
            transfers.records[index].result = WireTransferEvent(
                transfer: transfers.records[index].transfer, statusCode: 401, errorCode: WireTransfer.ErrorCode.cancelled,
                errorMessage: "the app cancelled the authentication challenge")
            transfers.fileRemovals.append(id)
            announceTransfer(transfers.records[index], "cancelled: the app cancelled its authentication challenge")
        default:
            decline(index, "the app chose \(answer.disposition.rawValue): the 401 is the response")
            return nil
        }
        saveTransfers()
        deliverTransfers(record)
        reconsiderTransfers()
        return nil
    }

    /// Default handling: the transfer starts again, and a 401 completes it as the server's answer.
    private func decline(_ index: Int, _ why: String) {
        transfers.records[index].challengeDeclined = true
        transfers.records[index].phase = .waiting
        transfers.records[index].result = nil
        transfers.credentials[transfers.records[index].id] = nil
        saveTransfers()
        announceTransfer(transfers.records[index], why)
        queueTransferPass()
    }

    /// The protection space of the transfer's URL (its original one: a challenge after a
    /// redirect is asked of the URL the app named).
    func credentialSpace(_ record: TransferRecord, method: WireChallenge.Method, realm: String?) -> TransferCredentialStore.Space {
        let url = URLComponents(string: record.transfer.url)
        let scheme = url?.scheme?.lowercased() ?? "http"
        return TransferCredentialStore.Space(
            app: record.app, method: method, host: url?.host?.lowercased() ?? "", port: url?.port ?? (scheme == "https" ? 443 : 80),
            protocol: scheme, realm: realm)
    }

    private func describe(_ space: TransferCredentialStore.Space) -> String {
        "\(space.method == .digest ? "Digest" : "Basic") \(space.protocol)://\(space.host):\(space.port)\(space.realm.map { " realm \($0.debugDescription)" } ?? "")"
    }

    /// A download's resume data, where it has bytes to go on from; nil otherwise.
    func resumeData(_ record: TransferRecord) -> Data? {
        guard record.transfer.kind == .download, record.bytesReceived > 0, transfers.store.fileBytes(record.id) > 0 else { return nil }
        return WireResumeData(
            transfer: record.id, url: record.transfer.url, method: record.transfer.method, headers: record.transfer.headers,
            bytes: record.bytesReceived).data
    }
}
