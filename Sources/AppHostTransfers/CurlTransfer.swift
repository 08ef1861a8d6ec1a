#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CCurl
import AppHostRuntime
import AppHostProtocol
import AppHostSystem

/// One attempt at one transfer: a libcurl easy handle, its file, and what its response said.
/// Made, driven and ended on the engine's thread alone (TransferService), so its state needs no
/// lock; libcurl calls its callbacks on that thread, from `curl_multi_perform`.
final class CurlTransfer {
    let job: TransferJob
    let report: @Sendable (TransferUpdate) -> Void
    /// 0 for the first attempt.
    let attempt: Int
    let handle: UnsafeMutableRawPointer
    /// Why this attempt ended, when the host decided it (a status, a file, a refused address).
    private(set) var failure: Failure?
    /// The download's ETag or Last-Modified, for the next attempt's If-Range.
    private(set) var validator: String?
    /// The server asked for authentication the transfer does not have (a 401 with
    /// `WWW-Authenticate`): the attempt ended there, for the app to answer.
    private(set) var challenge: (method: WireChallenge.Method, realm: String?)?

    struct Failure: Error {
        var code: Int
        var message: String
        var status: Int?
        /// Another attempt may mend it (a connection cut short, a range refused).
        var retry = false
    }

    private let destinations: TransferDestinations
    private var fd: Int32 = -1
    /// Where the download asked to resume (its part file's size), and where the next byte goes.
    private var resumeFrom: Int64 = 0
    private var writeAt: Int64 = 0
    private var expected: Int64?
    private var uploadSize: Int64 = 0
    private var responseBody: [UInt8] = []
    /// The response head being read: a redirect's or a 100's is replaced by the next.
    private var status = 0
    private(set) var fields: [String: String] = [:]
    /// The response head's fields as the server named them, for the app (at most
    /// `TransferService.headerFieldLimit` of them, each value cut at 4 KiB).
    private var namedFields: [String: String] = [:]
    private var headDone = false
    /// A Digest credential's first 401, which libcurl answers itself (its nonce), has been seen.
    private var digestAsked = false
    private var lastProgress = ContinuousClock.now
    private var headers: UnsafeMutablePointer<curl_slist>?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    /// Opens the file and sets up the handle; throws the failure that ends the transfer.
    init(job: TransferJob, attempt: Int, validator: String?, settings: TransferService.Settings,
         report: @escaping @Sendable (TransferUpdate) -> Void) throws(Failure) {
        guard let handle = curl_easy_init() else {
            throw Failure(code: WireTransfer.ErrorCode.cannotConnectToHost, message: "libcurl could not make a transfer")
        }
        self.handle = handle
        self.job = job
        self.attempt = attempt
        self.report = report
        self.validator = validator
        destinations = settings.destinations
        errorBuffer.initialize(to: 0)
        try open()
        configure(settings)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headers)
        errorBuffer.deallocate()
        if fd >= 0 { close(fd) }
        if job.trustedCertificate != nil { unlink(trustFile) }
    }

    private var isDownload: Bool { job.transfer.kind == .download }

    private func open() throws(Failure) {
        if isDownload {
            fd = Glibc.open(job.file.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure(code: WireTransfer.ErrorCode.cannotWriteToFile, message: "cannot open the part file: \(errnoText(errno))") }
        } else {
            fd = Glibc.open(job.file.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw Failure(code: WireTransfer.ErrorCode.fileDoesNotExist, message: "cannot open the upload's body: \(errnoText(errno))") }
        }
        var info = stat()
        fstat(fd, &info)
        if isDownload { resumeFrom = Int64(info.st_size) } else { uploadSize = Int64(info.st_size) }
    }

    private func configure(_ settings: TransferService.Settings) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        apphost_curl_set_string(handle, CURLOPT_URL, job.transfer.url)
        apphost_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        apphost_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        // Reads of up to 512 KiB (16 KiB by default): a 1 GiB download makes 2,048 writes of its
        // part file, not 65,536.
        apphost_curl_set_long(handle, CURLOPT_BUFFERSIZE, 512 * 1024)
        // http and https only, after redirects too; at most 10 of them.
        apphost_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        apphost_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        apphost_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        apphost_curl_set_long(handle, CURLOPT_MAXREDIRS, 10)
        apphost_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeout.milliseconds)
        apphost_curl_set_long(handle, CURLOPT_TIMEOUT_MS, settings.resourceTimeout.milliseconds)
        // Nothing received for the read timeout: the attempt ends (and another resumes).
        apphost_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        apphost_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, (settings.readTimeout.milliseconds + 999) / 1000))
        // Every connection's address is judged before it is made (TransferDestinations).
        apphost_curl_set_opensocket(handle) { user, _, address in
            guard let user, let address else { return apphost_curl_socket_bad() }
            return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().openSocket(address)
        }
        apphost_curl_set_pointer(handle, CURLOPT_OPENSOCKETDATA, me)
        apphost_curl_set_write(handle, CURLOPT_HEADERFUNCTION) { line, size, count, user in
            guard let line, let user else { return 0 }
            let bytes = UnsafeRawBufferPointer(start: line, count: size * count)
            return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().headerLine(bytes) ? size * count : 0
        }
        apphost_curl_set_pointer(handle, CURLOPT_HEADERDATA, me)
        apphost_curl_set_write(handle, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().received(bytes) ? size * count : 0
        }
        apphost_curl_set_pointer(handle, CURLOPT_WRITEDATA, me)

        // The app's answer to a challenge, or the credential the host kept for its protection
        // space: libcurl sends it for this scheme only, and never to another host (a redirect's).
        if let certificate = job.trustedCertificate { trust(certificate) }
        if let credential = job.credential {
            apphost_curl_set_string(handle, CURLOPT_USERNAME, credential.user)
            apphost_curl_set_string(handle, CURLOPT_PASSWORD, credential.password)
            apphost_curl_set_long(handle, CURLOPT_HTTPAUTH, credential.method == .digest ? Self.curlAuthDigest : Self.curlAuthBasic)
        }
        let method = job.transfer.method ?? (isDownload ? "GET" : "POST")
        if isDownload {
            if method == "HEAD" {
                apphost_curl_set_long(handle, CURLOPT_NOBODY, 1)
            } else if method != "GET" {
                apphost_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, method)
            }
            if resumeFrom > 0 {
                apphost_curl_set_string(handle, CURLOPT_RANGE, "\(resumeFrom)-")
                if let validator { add("If-Range: \(validator)") }
            }
        } else {
            if method == "POST" {
                apphost_curl_set_long(handle, CURLOPT_POST, 1)
                apphost_curl_set_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(uploadSize))
            } else {
                apphost_curl_set_long(handle, CURLOPT_UPLOAD, 1)
                apphost_curl_set_offset(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(uploadSize))
                if method != "PUT" { apphost_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, method) }
            }
            apphost_curl_set_read(handle) { buffer, size, count, user in
                guard let buffer, let user else { return Int(CURL_READFUNC_ABORT) }
                return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().readBody(buffer, size * count)
            }
            apphost_curl_set_pointer(handle, CURLOPT_READDATA, me)
            // A redirect that keeps the body (307, 308) sends it again from the start.
            apphost_curl_set_seek(handle) { user, offset, origin in
                guard let user, origin == SEEK_SET else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
                let fd = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().fd
                return lseek(fd, off_t(offset), SEEK_SET) < 0 ? Int32(CURL_SEEKFUNC_FAIL) : Int32(CURL_SEEKFUNC_OK)
            }
            apphost_curl_set_pointer(handle, CURLOPT_SEEKDATA, me)
            apphost_curl_set_long(handle, CURLOPT_NOPROGRESS, 0)
            apphost_curl_set_xferinfo(handle) { user, _, _, _, sent in
                guard let user else { return 0 }
                Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().progress(sent: Int64(sent))
                return 0
            }
            apphost_curl_set_pointer(handle, CURLOPT_XFERINFODATA, me)
            add("Content-Type: application/octet-stream")
            // No wait for a 100 Continue that a server may never send.
            add("Expect:")
        }
        // The app's header fields, but for those the transfer itself sets (its length, its
        // range, the connection's).
        let managed: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "range", "if-range", "expect", "te", "upgrade"]
        for (name, value) in (job.transfer.headers ?? [:]).sorted(by: { $0.key < $1.key }) where !managed.contains(name.lowercased()) {
            if name.lowercased() == "content-type" { remove("Content-Type") }
            add("\(name): \(value)")
        }
        if headers != nil { apphost_curl_set_list(handle, CURLOPT_HTTPHEADER, headers) }
    }

    private func add(_ header: String) {
        headers = curl_slist_append(headers, header)
    }

    /// Drops the header the transfer set by default (an upload's Content-Type, which the app's replaces).
    private func remove(_ name: String) {
        var kept: UnsafeMutablePointer<curl_slist>?
        var item = headers
        while let current = item {
            let line = String(cString: current.pointee.data)
            if !line.lowercased().hasPrefix(name.lowercased() + ":") { kept = curl_slist_append(kept, line) }
            item = current.pointee.next
        }
        curl_slist_free_all(headers)
        headers = kept
    }

    // MARK: libcurl's callbacks

    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        let raw = UnsafeRawPointer(address).advanced(by: MemoryLayout<curl_sockaddr>.offset(of: \.addr)!)
        let bytes: [UInt8]
        let port: UInt16
        switch family {
        case AF_INET:
            let v4 = raw.loadUnaligned(as: sockaddr_in.self)
            bytes = withUnsafeBytes(of: v4.sin_addr) { Array($0) }
            port = UInt16(bigEndian: v4.sin_port)
        case AF_INET6:
            let v6 = raw.loadUnaligned(as: sockaddr_in6.self)
            bytes = withUnsafeBytes(of: v6.sin6_addr) { Array($0) }
            port = UInt16(bigEndian: v6.sin6_port)
        default:
            failure = Failure(code: WireTransfer.ErrorCode.cannotConnectToHost, message: "the host makes background transfers over IPv4 and IPv6 only")
            return apphost_curl_socket_bad()
        }
        if let refusal = destinations.refusal(address: bytes, port: port) {
            failure = Failure(
                code: WireTransfer.ErrorCode.cannotConnectToHost,
                message: "the host does not make background transfers to \(refusal) (--allow-transfers-to allows one)")
            return apphost_curl_socket_bad()
        }
        return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    }

    /// One line of a response head, "HTTP/1.1 206 Partial Content" first and an empty one last.
    private func headerLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            fields = [:]
            namedFields = [:]
            return true
        }
        if !line.isEmpty {
            if let colon = line.firstIndex(of: ":") {
                let name = String(line[..<colon]), value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                fields[name.lowercased()] = value
                if namedFields.count < TransferService.headerFieldLimit || namedFields[name] != nil {
                    // A field the server repeats is one, its values joined (as HTTPURLResponse has it).
                    let joined = namedFields[name].map { "\($0), \(value)" } ?? value
                    namedFields[name] = String(decoding: joined.utf8.prefix(4096), as: UTF8.self)
                }
            }
            return true
        }
        // The head's end: a 1xx, or a redirect libcurl follows, is not the response.
        if (100..<200).contains(status) || ((300..<400).contains(status) && fields["location"] != nil) { return true }
        if status == 401, let asked = authenticationAsked() {
            // Digest's first 401 brings the nonce libcurl answers with the credential it has.
            if job.credential?.method == .digest && asked.method == .digest && !digestAsked {
                digestAsked = true
                return true
            }
            if job.challengeable {
                challenge = asked
                return false
            }
        }
        headDone = true
        return isDownload ? downloadHead() : uploadHead()
    }

    /// Any status completes the download, as on iOS: an error status's body (a 404 page) is the
    /// download, and the status is in the task's response; only a failure of the client's is an
    /// error. But a refused range (416) to a resume: the resource changed; start from nothing.
    private func downloadHead() -> Bool {
        if status == 416 && resumeFrom > 0 {
            truncate()
            failure = Failure(code: WireTransfer.ErrorCode.networkConnectionLost, message: "the server refused the range", retry: true)
            return false
        }
        if status == 206 && resumeFrom > 0 && contentRangeStarts(at: resumeFrom) {
            writeAt = resumeFrom
        } else {
            // The server sent the whole resource: it did not allow the range, or it changed.
            truncate()
        }
        validator = fields["etag"] ?? fields["last-modified"]
        expected = fields["content-length"].flatMap { Int64($0) }.map { $0 + writeAt }
        report(.started(status: status, expected: expected, validator: validator, resumedAt: writeAt))
        return true
    }

    /// Any status completes the upload, as on iOS: the response's body and status reach the app.
    private func uploadHead() -> Bool {
        report(.started(status: status, expected: nil, validator: nil, resumedAt: 0))
        return true
    }

    private func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil else { return false }
        guard isDownload else {
            responseBody.append(contentsOf: bytes.prefix(max(0, TransferService.responseBodyLimit - responseBody.count)))
            return true
        }
        if let allowance = job.allowance, !allowance.take(Int64(bytes.count)) {
            failure = Failure(
                code: WireTransfer.ErrorCode.cannotWriteToFile,
                message: "the download would take the app past its storage limit of \(allowance.limit.mebibytes) (its container and its transfers' files count)")
            return false
        }
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(writeAt + Int64(done)))
            if written < 0 {
                if errno == EINTR { continue }
                failure = Failure(code: WireTransfer.ErrorCode.cannotWriteToFile, message: "cannot write the part file: \(errnoText(errno))")
                return false
            }
            done += written
        }
        writeAt += Int64(bytes.count)
        if ContinuousClock.now - lastProgress > .milliseconds(250) {
            lastProgress = .now
            report(.progress(received: writeAt, sent: 0))
        }
        return true
    }

    private func readBody(_ buffer: UnsafeMutablePointer<CChar>, _ size: Int) -> Int {
        while true {
            let count = read(fd, buffer, size)
            if count >= 0 { return count }
            if errno != EINTR { return Int(CURL_READFUNC_ABORT) }
        }
    }

    private func progress(sent: Int64) {
        guard ContinuousClock.now - lastProgress > .milliseconds(250) else { return }
        lastProgress = .now
        report(.progress(received: 0, sent: sent))
    }

    // MARK: The end

    /// What the attempt came to, given libcurl's result.
    func outcome(_ code: CURLcode) -> Result<TransferOutcome, Failure> {
        if let failure { return .failure(failure) }
        if let challenge { return .success(.challenged(method: challenge.method, realm: challenge.realm)) }
        if code == CURLE_PEER_FAILED_VERIFICATION { return untrusted() }
        guard code == CURLE_OK else { return .failure(classify(code)) }
        guard headDone else {
            return .failure(Failure(code: WireTransfer.ErrorCode.badServerResponse, message: "the server sent no response", retry: true))
        }
        if isDownload {
            if let expected, writeAt != expected {
                return .failure(Failure(code: WireTransfer.ErrorCode.networkConnectionLost, message: "the response was cut short", retry: true))
            }
            return .success(.completed(status: status, received: writeAt, sent: 0, responseBody: nil, headers: namedFields))
        }
        return .success(.completed(
            status: status, received: Int64(responseBody.count), sent: uploadSize, responseBody: Data(responseBody), headers: namedFields))
    }

    // MARK: Helpers

    /// Empties the part file (a response from its start), giving its bytes back to the app's allowance.
    private func truncate() {
        if resumeFrom > 0 {
            ftruncate(fd, 0)
            job.allowance?.give(resumeFrom)
            resumeFrom = 0
        }
        writeAt = 0
    }

    /// Whether `Content-Range` says the body starts at `offset`.
    private func contentRangeStarts(at offset: Int64) -> Bool {
        guard let value = fields["content-range"], value.hasPrefix("bytes ") else { return false }
        return value.dropFirst(6).split(separator: "-").first.flatMap { Int64($0) } == offset
    }
}
