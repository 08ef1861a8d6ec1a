public import Foundation
public import FoundationNetworking
import Synchronization

// Server trust as iOS code handles it (docs/transfers.md, "Background transfers"): Linux has no Security
// framework, so the SDK gives the few names a server-trust challenge's code uses — the trust of
// `challenge.protectionSpace.serverTrust`, its certificates, and `URLCredential(trust:)` — over
// what the host saw of the server: its certificate (DER) and subject. The system's evaluation
// already said no (that is why the app is asked); the app's answer decides.

/// A server-trust challenge's `authenticationMethod` (FoundationNetworking marks its own
/// unavailable, having no Security framework; this one shadows it, with Darwin's value).
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"

/// A certificate (Security's `SecCertificate`): its DER bytes and its subject's common name.
public final class SecCertificate: Sendable {
    let data: Data
    let subject: String?

    init(data: Data, subject: String?) {
        self.data = data
        self.subject = subject
    }
}

/// A server's trust (Security's `SecTrust`): the certificate it presented, which the system did
/// not trust.
public final class SecTrust: Sendable {
    let certificates: [SecCertificate]

    init(certificates: [SecCertificate]) {
        self.certificates = certificates
    }
}

/// The certificates of the trust: the server's own first.
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> Int { trust.certificates.count }

public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> [SecCertificate]? { trust.certificates }

public func SecTrustGetCertificateAtIndex(_ trust: SecTrust, _ index: Int) -> SecCertificate? {
    trust.certificates.indices.contains(index) ? trust.certificates[index] : nil
}

/// The certificate's DER bytes.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> Data { certificate.data }

/// The certificate's subject, its common name.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> String? { certificate.subject }

/// A server-trust challenge's protection space: `serverTrust` is the server's.
final class ServerTrustProtectionSpace: URLProtectionSpace, @unchecked Sendable {
    let trust: SecTrust

    init(host: String, port: Int, trust: SecTrust) {
        self.trust = trust
        super.init(host: host, port: port, protocol: "https", realm: nil, authenticationMethod: NSURLAuthenticationMethodServerTrust)
    }

    required init?(coder aDecoder: NSCoder) { nil }
}

extension URLProtectionSpace {
    /// The server's trust, for a server-trust challenge (`NSURLAuthenticationMethodServerTrust`); nil otherwise.
    public var serverTrust: SecTrust? { (self as? ServerTrustProtectionSpace)?.trust }
}

extension URLCredential {
    /// A credential that trusts the server's certificate, for a server-trust challenge: the
    /// host goes on trusting that certificate, and only it.
    public convenience init(trust: SecTrust) {
        self.init(user: "", password: "", persistence: .forSession)
        TrustCredentials.shared.keep(self, trust)
    }

    /// The trust of a credential made with `init(trust:)`.
    var trust: SecTrust? { TrustCredentials.shared.trust(of: self) }
}

/// The trusts of the credentials made with `URLCredential(trust:)` (FoundationNetworking's
/// credential has no room for one), by credential, as long as it lives.
final class TrustCredentials: Sendable {
    static let shared = TrustCredentials()

    private struct Entry {
        weak var credential: URLCredential?
        let trust: SecTrust
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    func keep(_ credential: URLCredential, _ trust: SecTrust) {
        entries.withLock { entries in
            entries = entries.filter { $0.value.credential != nil }
            entries[ObjectIdentifier(credential)] = Entry(credential: credential, trust: trust)
        }
    }

    func trust(of credential: URLCredential) -> SecTrust? {
        entries.withLock { entries in
            entries[ObjectIdentifier(credential)].flatMap { $0.credential === credential ? $0.trust : nil }
        }
    }
}
