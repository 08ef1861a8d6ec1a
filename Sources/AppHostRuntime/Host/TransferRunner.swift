package import Foundation
package import AppHostProtocol
import Synchronization

/// What carries out the host's HTTP transfers (docs/transfers.md, "Background transfers"): the apphost
/// executable gives its Supervisor one (AppHostTransfers' TransferService, on libcurl),
/// so that only the host links an HTTP client, and neither an app nor an app's tests do.
package protocol TransferRunner: Sendable {
    /// Starts the job; `report` gets its updates from another thread. A job already running is
    /// left alone.
    func start(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void)
    /// Stops the job (a download's part file stays, for a later resume); it reports nothing more.
    func stop(_ id: String)
}

/// What one transfer needs: its request and its file in the host's state directory.
package struct TransferJob: Sendable {
    package var id: String
    /// The app's bundle identifier: transfers take turns between apps.
    package var app: String
    package var transfer: WireTransfer
    /// A download's part file (resumed from its size), or an upload's body.
    package var file: URL
    /// A download's validator from an earlier attempt, for If-Range.
    package var validator: String?
    /// The bytes the app's transfers may still write (its storage limit); nil: no limit.
    package var allowance: TransferAllowance?
    /// The credential to answer the server's challenge with (the app's answer to it, or one the
    /// host kept for its protection space).
    package var credential: TransferCredential?
    /// Whether a 401 that asks for authentication ends the attempt as a challenge for the app;
    /// false once the app chose default handling: the 401 is then the response.
    package var challengeable = true
    /// The server certificate the app trusted (DER), answering a server-trust challenge: the
    /// transfer trusts it alone, with verification on (never verification off).
    package var trustedCertificate: Data?

    package init(id: String, app: String = "", transfer: WireTransfer, file: URL, validator: String? = nil, allowance: TransferAllowance? = nil) {
        self.id = id
        self.app = app
        self.allowance = allowance
        self.transfer = transfer
        self.file = file
        self.validator = validator
    }
}

/// What a transfer reports, in order: started (once per attempt), progress, then one end.
package enum TransferUpdate: Sendable {
    /// The response's head came: its status, the bytes expected in all, and what validates a
    /// later Range request (ETag or Last-Modified).
    case started(status: Int, expected: Int64?, validator: String?, resumedAt: Int64)
    case progress(received: Int64, sent: Int64)
    case ended(TransferOutcome)
}

/// What one app's downloads may still write: its storage limit less what its container and its
/// transfers' files hold (docs/transfers.md, "Background transfers"). Shared by the app's transfers
/// running at once; the host sets it afresh as each starts.
package final class TransferAllowance: Sendable {
    private let remaining: Atomic<Int64>
    /// The app's limit, for the message of a transfer that reaches it.
    package let limit: UInt64

    package init(remaining: Int64, limit: UInt64) {
        self.remaining = Atomic(remaining)
        self.limit = limit
    }

    package func reset(_ bytes: Int64) { remaining.store(bytes, ordering: .relaxed) }

    /// Takes `bytes` if that many remain; false (nothing taken) if not.
    package func take(_ bytes: Int64) -> Bool {
        var current = remaining.load(ordering: .relaxed)
        while current >= bytes {
            let (exchanged, original) = remaining.compareExchange(expected: current, desired: current - bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back what a file that shrank no longer holds.
    package func give(_ bytes: Int64) { remaining.add(bytes, ordering: .relaxed) }
}

package enum TransferOutcome: Sendable {
    /// `headers`: the response's header fields as the server named them (HTTPURLResponse's
    /// `allHeaderFields`), bounded.
    case completed(status: Int, received: Int64, sent: Int64, responseBody: Data?, headers: [String: String] = [:])
    case failed(code: Int, message: String, status: Int?)
    /// The server answered 401 with `WWW-Authenticate`: the app is asked (README.md,
    /// "Background transfers"); nothing of the body was kept.
    case challenged(method: WireChallenge.Method, realm: String?)
    /// The server's certificate is not one the system trusts (self-signed, an unknown issuer):
    /// the app is asked whether it trusts it (`NSURLAuthenticationMethodServerTrust`).
    case untrusted(ServerCertificate)
}

/// A TLS server's own certificate, as a server-trust challenge shows it to the app.
package struct ServerCertificate: Codable, Sendable, Equatable {
    /// DER, as `SecCertificateCopyData` gives it.
    package var der: Data
    /// Its subject's common name, as `SecCertificateCopySubjectSummary` gives it.
    package var subject: String?

    package init(der: Data, subject: String?) {
        self.der = der
        self.subject = subject
    }
}

/// A user name and password for a protection space, and the scheme they answer.
package struct TransferCredential: Codable, Sendable, Equatable {
    package var user: String
    package var password: String
    package var method: WireChallenge.Method

    package init(user: String, password: String, method: WireChallenge.Method) {
        self.user = user
        self.password = password
        self.method = method
    }
}
