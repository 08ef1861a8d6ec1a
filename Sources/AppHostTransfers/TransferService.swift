#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AsyncHTTPClient
package import AppHostRuntime
import NIOCore
import NIOHTTP1
import AppHostProtocol
import AppHostSystem

/// The host's HTTP transfers (README.md, "Background transfers"): one request per transfer, on
/// async-http-client, never in an app process (the apphost executable alone links it). It knows nothing of apps: it is given a transfer
/// and its files, and reports what happens through `report` (the supervisor hops to its queue).
/// A download writes to its part file and resumes it with a Range request after a dropped
/// connection or a restart of the host; an upload streams its body file.
package final class TransferService: TransferRunner {
    /// Attempts after a dropped connection or a timeout before the transfer fails.
    static let maximumAttempts = 5
    /// An upload's response body is cut at this.
    static let responseBodyLimit = 64 * 1024

    private let client: HTTPClient
    private let running = Mutex<Jobs>(Jobs())

    /// The jobs running, and those stopped whose task has not yet returned: a job started again
    /// waits for its stopped run, so two never write one part file.
    private struct Jobs {
        var running: [String: Task<Void, Never>] = [:]
        var stopping: [String: Task<Void, Never>] = [:]
    }
    private let resourceTimeout: TimeAmount

    package init(connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(60), resourceTimeout: Duration = .seconds(7 * 24 * 3600)) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 10, allowCycles: false),
            timeout: .init(connect: Self.amount(connectTimeout), read: Self.amount(readTimeout)))
        configuration.decompression = HTTPClient.Decompression.disabled
        // A refused connection is the transfer's error, not a reason to keep trying in the pool:
        // the service retries what may mend (a dropped connection), and the network command
        // pauses and resumes.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.resourceTimeout = Self.amount(resourceTimeout)
    }

    /// NIO's TimeAmount for a Duration.
    private static func amount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    deinit {
        try? client.syncShutdown()
    }

    /// Starts the job; `report` gets its updates from another thread. A job already running is
    /// left alone.
    package func start(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void) {
        running.withLock { jobs in
            guard jobs.running[job.id] == nil else { return }
            let previous = jobs.stopping[job.id]
            let task = Task { [self] in
                await previous?.value
                let outcome = await run(job, report: report)
                // A stopped job reports nothing more: whoever stopped it decided its fate.
                let stillWanted = self.running.withLock { jobs in
                    guard jobs.running[job.id] != nil, !Task.isCancelled else { return false }
                    jobs.running[job.id] = nil
                    return true
                }
                if stillWanted { report(.ended(outcome)) }
            }
            jobs.running[job.id] = task
        }
    }

    /// Stops the job (its part file stays, for a later resume); it reports nothing more.
    package func stop(_ id: String) {
        running.withLock { jobs in
            guard let task = jobs.running.removeValue(forKey: id) else { return }
            task.cancel()
            jobs.stopping[id] = task
            Task { [self] in
                await task.value
                self.running.withLock { if $0.stopping[id] == task { $0.stopping[id] = nil } }
            }
        }
    }

    private func run(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void) async -> TransferOutcome {
        var validator = job.validator
        var lastFailure: (code: Int, message: String)?
        for attempt in 0..<Self.maximumAttempts {
            if Task.isCancelled { return .failed(code: WireTransfer.ErrorCode.cancelled, message: "cancelled", status: nil) }
            if attempt > 0 {
                try? await Task.sleep(for: .milliseconds(100 << min(attempt, 5)))
            }
            do {
                switch job.transfer.kind {
                case .download:
                    return try await download(job, validator: &validator, report: report)
                case .upload:
                    return try await upload(job, report: report)
                }
            } catch let failure as TransferFailure {
                return .failed(code: failure.code, message: failure.message, status: failure.status)
            } catch {
                let (code, message, retry) = Self.classify(error)
                lastFailure = (code, message)
                if !retry || Task.isCancelled { return .failed(code: code, message: message, status: nil) }
            }
        }
        let failure = lastFailure ?? (WireTransfer.ErrorCode.networkConnectionLost, "the connection was lost")
        return .failed(code: failure.code, message: "\(failure.message) (\(Self.maximumAttempts) attempts)", status: nil)
    }

    private func download(_ job: TransferJob, validator: inout String?, report: @escaping @Sendable (TransferUpdate) -> Void) async throws -> TransferOutcome {
        let fd = open(job.file.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TransferFailure(code: WireTransfer.ErrorCode.cannotConnectToHost, message: "cannot open the part file: \(errnoText(errno))") }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        var offset = Int64(info.st_size)
        var request = HTTPClientRequest(url: job.transfer.url)
        request.method = HTTPMethod(rawValue: job.transfer.method ?? "GET")
        if offset > 0 {
            request.headers.add(name: "Range", value: "bytes=\(offset)-")
            if let validator { request.headers.add(name: "If-Range", value: validator) }
        }
        let response = try await client.execute(request, deadline: .now() + resourceTimeout)
        // Stopped while waiting for the head: the part file is no longer this run's.
        try Task.checkCancellation()
        let status = Int(response.status.code)
        if status >= 400 {
            if status == 416 && offset > 0 {
                // The range is past the resource: it changed; start again from nothing.
                ftruncate(fd, 0)
                throw RetryableFailure()
            }
            throw TransferFailure(
                code: WireTransfer.ErrorCode.badServerResponse, message: "the server answered HTTP \(status) \(response.status.reasonPhrase)",
                status: status)
        }
        if status != 206 || offset == 0 || !Self.contentRange(response.headers, startsAt: offset) {
            // The server sent the whole resource: it did not allow the range, or it changed.
            offset = 0
            ftruncate(fd, 0)
        }
        validator = response.headers.first(name: "ETag") ?? response.headers.first(name: "Last-Modified")
        let length = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        report(.started(status: status, expected: length.map { $0 + offset }, validator: validator, resumedAt: offset))
        var received = offset
        var reported = ContinuousClock.now
        for try await chunk in response.body {
            try Task.checkCancellation()
            try chunk.withUnsafeReadableBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(received + Int64(done)))
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw TransferFailure(code: WireTransfer.ErrorCode.cannotConnectToHost, message: "cannot write the part file: \(errnoText(errno))")
                    }
                    done += written
                }
            }
            received += Int64(chunk.readableBytes)
            if ContinuousClock.now - reported > .milliseconds(250) {
                reported = .now
                report(.progress(received: received, sent: 0))
            }
        }
        if let length, received != length + offset {
            throw RetryableFailure()
        }
        return .completed(status: status, received: received, sent: 0, responseBody: nil)
    }

    private func upload(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void) async throws -> TransferOutcome {
        let fd = open(job.file.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TransferFailure(code: WireTransfer.ErrorCode.fileDoesNotExist, message: "cannot open the upload's body: \(errnoText(errno))") }
        var info = stat()
        fstat(fd, &info)
        let size = Int64(info.st_size)
        let body = FileChunks(fd: fd)
        var request = HTTPClientRequest(url: job.transfer.url)
        request.method = HTTPMethod(rawValue: job.transfer.method ?? "POST")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .stream(body, length: .known(size))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: .now() + resourceTimeout)
        } catch {
            body.close()
            throw error
        }
        body.close()
        let status = Int(response.status.code)
        report(.started(status: status, expected: nil, validator: nil, resumedAt: 0))
        var data = Data()
        for try await chunk in response.body where data.count < Self.responseBodyLimit {
            data.append(contentsOf: chunk.readableBytesView.prefix(Self.responseBodyLimit - data.count))
        }
        if status >= 400 {
            throw TransferFailure(
                code: WireTransfer.ErrorCode.badServerResponse, message: "the server answered HTTP \(status) \(response.status.reasonPhrase)", status: status)
        }
        return .completed(status: status, received: Int64(data.count), sent: size, responseBody: data)
    }

    /// Whether `Content-Range` says the body starts at `offset`.
    private static func contentRange(_ headers: HTTPHeaders, startsAt offset: Int64) -> Bool {
        guard let value = headers.first(name: "Content-Range"), value.hasPrefix("bytes ") else { return false }
        return value.dropFirst(6).split(separator: "-").first.flatMap { Int64($0) } == offset
    }

    /// The URLError code and message for an error, and whether another attempt may help.
    static func classify(_ error: any Error) -> (code: Int, message: String, retry: Bool) {
        let text = String(describing: error)
        let type = String(reflecting: Swift.type(of: error))
        if error is RetryableFailure { return (WireTransfer.ErrorCode.networkConnectionLost, "the response was cut short", true) }
        if error is CancellationError { return (WireTransfer.ErrorCode.cancelled, "cancelled", false) }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout: return (WireTransfer.ErrorCode.timedOut, "connecting timed out", false)
            case .readTimeout: return (WireTransfer.ErrorCode.timedOut, "the server sent nothing within the read timeout", true)
            case .deadlineExceeded: return (WireTransfer.ErrorCode.timedOut, "the transfer took longer than its resource timeout", false)
            case .remoteConnectionClosed: return (WireTransfer.ErrorCode.networkConnectionLost, "the server closed the connection", true)
            case .redirectLimitReached, .redirectCycleDetected: return (WireTransfer.ErrorCode.httpTooManyRedirects, "too many redirects (\(client))", false)
            case .cancelled: return (WireTransfer.ErrorCode.cancelled, "cancelled", false)
            case .invalidURL, .emptyHost, .emptyScheme: return (WireTransfer.ErrorCode.badURL, "the URL cannot be fetched (\(client))", false)
            default: break
            }
        }
        if text.contains("Connection refused") || text.contains("ECONNREFUSED") || text.contains("connectionRefused") {
            return (WireTransfer.ErrorCode.cannotConnectToHost, "the server refused the connection", false)
        }
        if type.contains("SSL") || type.contains("TLS") || text.contains("handshake") || text.contains("certificate") {
            return (WireTransfer.ErrorCode.secureConnectionFailed, "the TLS connection failed: \(text)", false)
        }
        if type.contains("NIOConnectionError") || text.contains("lookup") || text.contains("resolve") {
            return (WireTransfer.ErrorCode.cannotFindHost, "cannot reach the host: \(text)", false)
        }
        return (WireTransfer.ErrorCode.networkConnectionLost, "the connection failed: \(text)", true)
    }
}

/// A transfer failure that another attempt would not mend: an HTTP error status, a file.
private struct TransferFailure: Error {
    var code: Int
    var message: String
    var status: Int?
}

/// A response cut short or a range refused: try again, resuming.
private struct RetryableFailure: Error {}

/// An upload's body file, read a chunk at a time as async-http-client asks for it.
private final class FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    private let fd: Mutex<Int32>

    init(fd: Int32) { self.fd = Mutex(fd) }

    func close() {
        fd.withLock {
            if $0 >= 0 { Glibc.close($0) }
            $0 = -1
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: FileChunks

        mutating func next() async throws -> ByteBuffer? {
            chunks.fd.withLock { fd in
                guard fd >= 0 else { return nil }
                var buffer = ByteBuffer()
                buffer.reserveCapacity(64 * 1024)
                let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 64 * 1024) { raw in
                    Swift.max(0, read(fd, raw.baseAddress, raw.count))
                }
                return count == 0 ? nil : buffer
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}
