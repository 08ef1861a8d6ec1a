import Foundation
import AppHostProtocol

// A server's challenge (docs/transfers.md, "Background transfers"): a 401 with `WWW-Authenticate`,
// Basic or Digest, answered with the credential kept for its protection space, else handed to
// the app as a finished transfer is (to the run that sent it, or by a wake) and the transfer
// goes on with the app's answer.
extension Transfers {
    /// The attempt ended on a challenge: answered with the credential the host kept for the
    /// protection space if it has one not yet tried, else the app is asked.
    mutating func challenged(_ id: String, method: WireChallenge.Method, realm: String?, _ facts: TransferDesk.Facts) -> [Effect] {
        guard let index = index(id) else { return [] }
        let record = records[index]
        let space = Self.space(record, method: method, realm: realm)
        let tried = credentials[id]
        if tried == nil, let kept = credentialStore.credential(for: space) {
            credentials[id] = kept
            records[index].phase = .waiting
            save()
            return [Self.announce(record, "answered its server's challenge with the credential kept for \(Self.describe(space))"), .pass]
        }
        if let tried {
            records[index].failedCredentials = (record.failedCredentials ?? 0) + 1
            if credentialStore.credential(for: space) == tried { credentialStore.forget(space) }
        }
        if (records[index].failedCredentials ?? 0) >= Self.maximumFailedCredentials {
            return decline(index, "its server refused \(Self.maximumFailedCredentials) credentials: the 401 is the response")
        }
        records[index].phase = .challenged
        records[index].result = WireTransferEvent(
            transfer: record.transfer, statusCode: 401, bytesReceived: record.bytesReceived, bytesSent: record.bytesSent,
            challenge: WireChallenge(
                method: method, host: space.host, port: space.port, protocol: space.protocol, realm: realm,
                previousFailureCount: records[index].failedCredentials ?? 0))
        save()
        let said = Self.announce(record, "asks for authentication (\(Self.describe(space))): the app is asked")
        return [said] + (facts.app(record.app).map { deliver(to: $0, facts) } ?? [])
    }

    /// The server's certificate is not one the system trusts: the app is asked
    /// (`NSURLAuthenticationMethodServerTrust`, with the certificate) as for a 401.
    mutating func untrusted(_ id: String, _ certificate: ServerCertificate, _ facts: TransferDesk.Facts) -> [Effect] {
        guard let index = index(id) else { return [] }
        let record = records[index]
        let url = URLComponents(string: record.transfer.url)
        records[index].phase = .challenged
        records[index].result = WireTransferEvent(
            transfer: record.transfer, bytesReceived: record.bytesReceived, bytesSent: record.bytesSent,
            challenge: WireChallenge(
                method: .serverTrust, host: url?.host?.lowercased() ?? "", port: url?.port ?? 443, protocol: "https", realm: nil,
                previousFailureCount: 0, certificate: certificate.der, subject: certificate.subject))
        save()
        let said = Self.announce(record, "has a server certificate the system does not trust (\(certificate.subject ?? "no subject")): the app is asked")
        return [said] + (facts.app(record.app).map { deliver(to: $0, facts) } ?? [])
    }

    /// The app's answer to a server-trust challenge: `useCredential` with `URLCredential(trust:)`
    /// goes on trusting that certificate (and no other); cancelling cancels; anything else fails
    /// as iOS fails an untrusted server (NSURLErrorServerCertificateUntrusted).
    private mutating func trustAnswered(_ index: Int, _ answer: WireChallengeAnswer, _ challenge: WireChallenge) -> [Effect] {
        let id = records[index].id
        if answer.disposition == .useCredential, answer.trustsServer == true, let certificate = challenge.certificate {
            trusted[id] = certificate
            records[index].phase = .waiting
            return [Self.announce(records[index], "goes on trusting the server's certificate (\(challenge.subject ?? "no subject")), as the app does")]
        }
        let cancelled = answer.disposition == .cancelAuthenticationChallenge
        records[index].phase = .finished
        records[index].result = WireTransferEvent(
            transfer: records[index].transfer,
            errorCode: cancelled ? WireTransfer.ErrorCode.cancelled : WireTransfer.ErrorCode.serverCertificateUntrusted,
            errorMessage: cancelled ? "the app cancelled the authentication challenge" : "the server's certificate is not trusted (the app chose \(answer.disposition.rawValue))")
        fileRemovals.append(id)
        return [Self.announce(records[index], cancelled ? "cancelled: the app cancelled its authentication challenge" : "failed: the app did not trust the server's certificate")]
    }

    /// `transferChallengeAnswered` from the app's run `run`: the transfer goes on with the app's
    /// answer; a run that was not asked the challenge violates.
    mutating func challengeAnswered(
        _ session: String, _ task: Int, _ answer: WireChallengeAnswer, _ app: TransferDesk.App, _ run: RunID, _ facts: TransferDesk.Facts
    ) -> (violation: String?, effects: [Effect]) {
        guard let index = index(app: app.identifier, session: session, task: task), records[index].phase == .challenged,
              let challenge = records[index].result?.challenge, deliveries.wasSent(records[index].id, to: run)
        else {
            return ("it answered a challenge of task \(task) of background session \(session.cut(to: 64).debugDescription) that the host did not ask it", [])
        }
        guard (answer.user?.utf8.count ?? 0) <= 1024, (answer.password?.utf8.count ?? 0) <= 1024 else {
            return ("it answered a challenge with a user name or password over 1024 bytes", [])
        }
        let id = records[index].id
        deliveries.forget(id)
        records[index].result = nil
        var effects: [Effect]
        switch answer.disposition {
        case _ where challenge.method == .serverTrust:
            effects = trustAnswered(index, answer, challenge)
        case .useCredential where answer.user != nil:
            let credential = TransferCredential(user: answer.user ?? "", password: answer.password ?? "", method: challenge.method)
            credentials[id] = credential
            let space = Self.space(records[index], method: challenge.method, realm: challenge.realm)
            let permanent = answer.persistence == .permanent || answer.persistence == .synchronizable
            if permanent { credentialStore.keep(credential, for: space) }
            records[index].phase = .waiting
            effects = [Self.announce(records[index], "goes on with the app's credential\(permanent ? ", kept for \(Self.describe(space))" : "")")]
        case .cancelAuthenticationChallenge:
            records[index].phase = .finished
            records[index].result = WireTransferEvent(
                transfer: records[index].transfer, statusCode: 401, errorCode: WireTransfer.ErrorCode.cancelled,
                errorMessage: "the app cancelled the authentication challenge")
            fileRemovals.append(id)
            effects = [Self.announce(records[index], "cancelled: the app cancelled its authentication challenge")]
        default:
            return (nil, decline(index, "the app chose \(answer.disposition.rawValue): the 401 is the response"))
        }
        save()
        effects += deliver(to: app, facts)
        return (nil, effects + reconsider(facts).effects)
    }

    /// Default handling: the transfer starts again, and a 401 completes it as the server's answer.
    private mutating func decline(_ index: Int, _ why: String) -> [Effect] {
        records[index].challengeDeclined = true
        records[index].phase = .waiting
        records[index].result = nil
        credentials[records[index].id] = nil
        save()
        return [Self.announce(records[index], why), .pass]
    }

    /// The protection space of the transfer's URL (its original one: a challenge after a
    /// redirect is asked of the URL the app named).
    static func space(_ record: TransferRecord, method: WireChallenge.Method, realm: String?) -> TransferCredentialStore.Space {
        let url = URLComponents(string: record.transfer.url)
        let scheme = url?.scheme?.lowercased() ?? "http"
        return TransferCredentialStore.Space(
            app: record.app, method: method, host: url?.host?.lowercased() ?? "", port: url?.port ?? (scheme == "https" ? 443 : 80),
            protocol: scheme, realm: realm)
    }

    private static func describe(_ space: TransferCredentialStore.Space) -> String {
        "\(space.method == .digest ? "Digest" : "Basic") \(space.protocol)://\(space.host):\(space.port)\(space.realm.map { " realm \($0.debugDescription)" } ?? "")"
    }
}
