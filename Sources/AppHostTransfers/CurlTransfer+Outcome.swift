#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CCurl
import AppHostProtocol

// What one attempt's answer means (CurlTransfer): libcurl's error as a URLError, and a 401's
// challenge as the scheme and realm the app is asked about.
extension CurlTransfer {
    /// CURLAUTH_BASIC and CURLAUTH_DIGEST (macros with a cast, which do not import).
    static let curlAuthBasic = 1
    static let curlAuthDigest = 2

    /// The scheme and realm a 401's `WWW-Authenticate` asks for: Digest where it offers it (the
    /// stronger), else Basic; nil for a scheme the host does not answer.
    func authenticationAsked() -> (method: WireChallenge.Method, realm: String?)? {
        guard let header = fields["www-authenticate"] else { return nil }
        let lower = header.lowercased()
        let method: WireChallenge.Method
        if lower.hasPrefix("digest") || lower.contains(", digest") {
            method = .digest
        } else if lower.hasPrefix("basic") || lower.contains(", basic") {
            method = .basic
        } else {
            return nil
        }
        // realm="…", the first: a header with two schemes names a realm for each, alike in practice.
        var realm: String?
        if let range = header.range(of: "realm=\"", options: .caseInsensitive) {
            realm = header[range.upperBound...].split(separator: "\"", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        }
        return (method, realm)
    }

    /// The URLError code and message for libcurl's error, and whether another attempt may help.
    func classify(_ code: CURLcode) -> Failure {
        let detail = String(cString: errorBuffer)
        let said = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        typealias Code = WireTransfer.ErrorCode
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return Failure(code: Code.cannotFindHost, message: "cannot find the host: \(said)")
        case CURLE_COULDNT_CONNECT:
            return Failure(code: Code.cannotConnectToHost, message: "the server refused the connection")
        case CURLE_OPERATION_TIMEDOUT:
            if said.contains("too slow") {
                return Failure(code: Code.timedOut, message: "the server sent nothing within the read timeout", retry: true)
            }
            var connected: curl_off_t = 0
            apphost_curl_get_offset(handle, CURLINFO_CONNECT_TIME_T, &connected)
            return connected == 0
                ? Failure(code: Code.timedOut, message: "connecting timed out")
                : Failure(code: Code.timedOut, message: "the transfer took longer than its resource timeout")
        case CURLE_TOO_MANY_REDIRECTS:
            return Failure(code: Code.httpTooManyRedirects, message: "too many redirects (\(said))")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return Failure(code: Code.unsupportedURL, message: "a redirect led to a URL that is not http or https (\(said))")
        case CURLE_URL_MALFORMAT:
            return Failure(code: Code.badURL, message: "the URL cannot be fetched (\(said))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED:
            return Failure(code: Code.secureConnectionFailed, message: "the TLS connection failed: \(said)")
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return Failure(code: Code.networkConnectionLost, message: "the server closed the connection (\(said))", retry: true)
        default:
            return Failure(code: Code.networkConnectionLost, message: "the connection failed: \(said)", retry: true)
        }
    }
}

extension Duration {
    /// Whole milliseconds, for libcurl's options.
    var milliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}
