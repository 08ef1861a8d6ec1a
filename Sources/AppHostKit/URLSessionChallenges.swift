import Foundation
import FoundationNetworking
import Synchronization
import AppHostProtocol

// A background transfer that asks to authenticate (docs/transfers.md, "Background transfers"): the host
// woke or launched the app as for a finished transfer, and the task's delegate gets
// `urlSession(_:task:didReceive:completionHandler:)` with the server's protection space. Its
// answer goes to the host, which goes on with the transfer: with the credential (kept by the
// host for the protection space when it is `.permanent`), without one, or cancelled.

extension URLSessionRegistry {
    /// Calls the task's delegate with the challenge (on the delegate queue); its answer, given
    /// once from any thread, is sent to the host.
    func challenge(_ task: any BackgroundTask, _ event: WireTransferEvent, in session: URLSession) {
        guard let wire = event.challenge else { return }
        let answered = Atomic<Bool>(false)
        let link = link
        let id = session.identifier
        let number = task.core.taskIdentifier
        let answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = { disposition, credential in
            guard !answered.exchange(true, ordering: .acquiringAndReleasing) else {
                link.warn("the completion handler of urlSession(_:task:didReceive:completionHandler:) was called twice; ignoring the second call")
                return
            }
            link.send(.transferChallengeAnswered(session: id, task: number, answer: Self.wireAnswer(disposition, credential)))
        }
        let space = wire.method == .serverTrust
            ? ServerTrustProtectionSpace(
                host: wire.host, port: wire.port,
                trust: SecTrust(certificates: wire.certificate.map { [SecCertificate(data: $0, subject: wire.subject)] } ?? []))
            : URLProtectionSpace(
                host: wire.host, port: wire.port, protocol: wire.protocol, realm: wire.realm,
                authenticationMethod: wire.method == .digest ? NSURLAuthenticationMethodHTTPDigest : NSURLAuthenticationMethodHTTPBasic)
        let response = event.statusCode.flatMap { status in
            URL(string: event.transfer.url).flatMap { HTTPURLResponse(url: $0, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:]) }
        }
        let sender = ChallengeSender(answer)
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: wire.previousFailureCount, failureResponse: response,
            error: nil, sender: sender)
        let askTask = {
            guard let delegate = session.delegate as? any URLSessionTaskDelegate else {
                // No delegate to ask: as iOS does, default handling.
                return answer(.performDefaultHandling, nil)
            }
            delegate.urlSession(session, task: task, didReceive: challenge, completionHandler: answer)
        }
        // A server's certificate is a connection's challenge: the session delegate's, and the
        // task delegate's where the session delegate does not implement the method (its default
        // implementation hands the challenge on through the sender).
        guard wire.method == .serverTrust, let delegate = session.delegate as? any URLSessionDelegate else { return askTask() }
        sender.unanswered = askTask
        delegate.urlSession(session, didReceive: challenge, completionHandler: answer)
    }

    static func wireAnswer(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?) -> WireChallengeAnswer {
        switch disposition {
        case .useCredential:
            if credential?.trust != nil { return WireChallengeAnswer(disposition: .useCredential, trustsServer: true) }
            guard let credential, let user = credential.user else { return WireChallengeAnswer(disposition: .useCredential) }
            let persistence: WireChallengeAnswer.Persistence = switch credential.persistence {
            case .none: .none
            case .forSession: .forSession
            case .permanent: .permanent
            case .synchronizable: .synchronizable
            @unknown default: .forSession
            }
            return WireChallengeAnswer(disposition: .useCredential, user: user, password: credential.password ?? "", persistence: persistence)
        case .performDefaultHandling: return WireChallengeAnswer(disposition: .performDefaultHandling)
        case .cancelAuthenticationChallenge: return WireChallengeAnswer(disposition: .cancelAuthenticationChallenge)
        case .rejectProtectionSpace: return WireChallengeAnswer(disposition: .rejectProtectionSpace)
        @unknown default: return WireChallengeAnswer(disposition: .performDefaultHandling)
        }
    }
}

/// The challenge's sender, for code that answers through `challenge.sender` as older iOS code does.
final class ChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
    let answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    /// A server-trust challenge offered to the session delegate: asks the task delegate
    /// instead, where the session delegate does not implement the method.
    var unanswered: (() -> Void)?

    /// The session delegate's default implementation ran: true if the task delegate is asked.
    func handOn() -> Bool {
        guard let unanswered else { return false }
        self.unanswered = nil
        unanswered()
        return true
    }

    init(_ answer: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        self.answer = answer
    }

    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) { answer(.useCredential, credential) }
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) { answer(.useCredential, nil) }
    func cancel(_ challenge: URLAuthenticationChallenge) { answer(.cancelAuthenticationChallenge, nil) }
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) { answer(.performDefaultHandling, nil) }
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) { answer(.rejectProtectionSpace, nil) }
}
