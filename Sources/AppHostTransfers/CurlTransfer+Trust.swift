#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CCurl
import AppHostRuntime
import AppHostProtocol

// A server whose certificate the system does not trust (docs/transfers.md, "Background transfers"): the
// attempt ends with the server's certificate, for the app to judge
// (`NSURLAuthenticationMethodServerTrust`); an attempt the app answered with
// `URLCredential(trust:)` trusts that one certificate, and nothing else beside the system's.
extension CurlTransfer {
    /// The certificate the app trusted, for libcurl: beside the job's file, in the host's state
    /// directory, for this attempt's life.
    var trustFile: String { job.file.path + ".trusted.pem" }

    /// Makes the certificate the app trusted this attempt's one trust anchor (`CURLOPT_CAINFO`
    /// of that certificate alone, no CA directory): its server is accepted presenting it,
    /// whatever name it bears (the app judged it), and a server presenting another is not.
    /// Verification stays on.
    func trust(_ certificate: Data) {
        let pem = "-----BEGIN CERTIFICATE-----\n"
            + certificate.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END CERTIFICATE-----\n"
        unlink(trustFile)
        _ = FileManager.default.createFile(atPath: trustFile, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
        apphost_curl_set_string(handle, CURLOPT_CAINFO, trustFile)
        apphost_curl_set_string(handle, CURLOPT_CAPATH, nil)
        apphost_curl_set_long(handle, CURLOPT_SSL_VERIFYPEER, 1)
        apphost_curl_set_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
    }

    /// The attempt ended verifying the server's certificate (libcurl's
    /// `CURLE_PEER_FAILED_VERIFICATION`, "SSL certificate problem"): the app is asked, with the
    /// certificate; one the app trusted already that fails is not the one it trusted.
    func untrusted() -> Result<TransferOutcome, Failure> {
        let said = String(cString: errorBuffer)
        if job.trustedCertificate != nil {
            return .failure(Failure(
                code: WireTransfer.ErrorCode.serverCertificateUntrusted,
                message: "the server's certificate is not the one the app trusted (\(said))"))
        }
        guard let certificate = serverCertificate() else {
            return .failure(Failure(code: WireTransfer.ErrorCode.serverCertificateUntrusted, message: "the server's certificate is not trusted (\(said))"))
        }
        return .success(.untrusted(certificate))
    }

    /// The server's own certificate, read by a connection of its own that only shakes hands
    /// (`CURLOPT_CONNECT_ONLY`, verification off, `CURLOPT_CERTINFO`), to the URL the attempt
    /// ended at and through the same judgement of addresses. Nothing is sent over it.
    private func serverCertificate() -> ServerCertificate? {
        guard let probe = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(probe) }
        var effective: UnsafeMutableRawPointer?
        apphost_curl_get_pointer(handle, CURLINFO_EFFECTIVE_URL, &effective)
        let url = effective.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? job.transfer.url
        apphost_curl_set_string(probe, CURLOPT_URL, url)
        apphost_curl_set_long(probe, CURLOPT_NOSIGNAL, 1)
        apphost_curl_set_string(probe, CURLOPT_PROTOCOLS_STR, "https")
        apphost_curl_set_long(probe, CURLOPT_CONNECT_ONLY, 1)
        apphost_curl_set_long(probe, CURLOPT_CONNECTTIMEOUT_MS, 5000)
        apphost_curl_set_long(probe, CURLOPT_SSL_VERIFYPEER, 0)
        apphost_curl_set_long(probe, CURLOPT_SSL_VERIFYHOST, 0)
        apphost_curl_set_long(probe, CURLOPT_CERTINFO, 1)
        apphost_curl_set_opensocket(probe) { user, _, address in
            guard let user, let address else { return apphost_curl_socket_bad() }
            return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().openSocket(address)
        }
        apphost_curl_set_pointer(probe, CURLOPT_OPENSOCKETDATA, Unmanaged.passUnretained(self).toOpaque())
        guard curl_easy_perform(probe) == CURLE_OK else { return nil }
        var info: UnsafeMutableRawPointer?
        guard apphost_curl_get_pointer(probe, CURLINFO_CERTINFO, &info) == CURLE_OK,
              let chain = info?.assumingMemoryBound(to: curl_certinfo.self).pointee, chain.num_of_certs > 0
        else { return nil }
        var pem: String?
        var subject: String?
        var item = chain.certinfo[0]
        while let current = item {
            let line = String(cString: current.pointee.data)
            if line.hasPrefix("Cert:") { pem = String(line.dropFirst(5)) }
            if line.hasPrefix("Subject:") { subject = Self.commonName(String(line.dropFirst(8))) }
            item = current.pointee.next
        }
        let body = (pem ?? "").split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else { return nil }
        return ServerCertificate(der: der, subject: subject)
    }

    /// "CN = example.com" out of a subject as OpenSSL prints it ("C = FR, O = x, CN = example.com").
    static func commonName(_ subject: String) -> String? {
        for part in subject.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0] == "CN" { return pair[1] }
        }
        return subject.isEmpty ? nil : subject
    }
}
