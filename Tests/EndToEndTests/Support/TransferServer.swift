import Foundation
import Hummingbird
import Synchronization

/// A real HTTP server on the loopback interface for the background-transfer tests (Hummingbird),
/// started by each test and stopped with it. Its resources:
///   GET /files/SIZE        SIZE bytes (byte i is i % 251), with an ETag; honours Range
///   GET /drop/SIZE         the same, but a request without Range gets half and a closed connection
///   GET /slow/SIZE         the same, sent in 64 KiB pieces 50 ms apart (honours Range)
///   GET /held/SIZE         the first half, then nothing more on that connection until it closes
///                          (a request with a Range gets the rest at once): a transfer that is
///                          surely under way, whatever the machine's load
///   GET /missing           404
///   PUT /upload            answers "received N bytes"
/// Every request is recorded with its Range header.
final class TransferServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>
    private let log = RequestLog()

    init() async throws {
        let port = try Self.freePort()
        self.port = port
        let router = Router()
        let log = self.log
        router.get("/files/:size") { request, context in
            Self.serve(request, context, log: log, path: "files", drop: false, slow: false)
        }
        router.get("/drop/:size") { request, context in
            Self.serve(request, context, log: log, path: "drop", drop: true, slow: false)
        }
        router.get("/slow/:size") { request, context in
            Self.serve(request, context, log: log, path: "slow", drop: false, slow: true)
        }
        router.get("/held/:size") { request, context in
            Self.serve(request, context, log: log, path: "held", drop: false, slow: false, hold: true)
        }
        router.get("/missing") { _, _ -> Response in
            log.entries.withLock { $0.append("GET /missing") }
            return Response(status: .notFound, body: ResponseBody(byteBuffer: ByteBuffer(string: "no such episode")))
        }
        router.put("/upload") { request, _ -> String in
            let body = try await request.body.collect(upTo: 64 << 20)
            log.entries.withLock { $0.append("PUT /upload \(body.readableBytes)") }
            return "received \(body.readableBytes) bytes"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        // On threads of its own: the tests block the cooperative pool's few threads while they
        // wait for the host's events, which must not starve the server.
        task = Task(executorPreference: ServerExecutor.shared) { try await app.runService() }
        // Ready when it accepts a connection.
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port: port) {
            guard Date() < deadline else { throw ServerDidNotStart() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    deinit { task.cancel() }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// "GET /drop/1000 range=bytes=500-", in the order they came.
    var requests: [String] { log.entries.withLock { $0 } }

    /// The byte at `index` of every resource.
    static func byte(_ index: Int) -> UInt8 { UInt8(index % 251) }

    static func content(_ size: Int) -> Data { Data((0..<size).map(byte)) }

    private static func serve(_ request: Request, _ context: some RequestContext, log: RequestLog, path: String, drop: Bool, slow: Bool, hold: Bool = false) -> Response {
        let size = Int(context.parameters.get("size") ?? "") ?? 0
        let range = request.headers[.range]
        log.entries.withLock { $0.append("GET /\(path)/\(size)\(range.map { " range=\($0)" } ?? "")") }
        let first = range.flatMap { $0.hasPrefix("bytes=") ? Int($0.dropFirst(6).split(separator: "-").first ?? "") : nil }
        let start = min(first ?? 0, size)
        var headers: HTTPFields = [.eTag: "\"v1\"", .acceptRanges: "bytes"]
        let partial = start > 0
        if partial { headers[.contentRange] = "bytes \(start)-\(size - 1)/\(size)" }
        let dropAt = drop && !partial ? size / 2 : nil
        let holdAt = hold && !partial ? size / 2 : nil
        let body = ResponseBody(contentLength: size - start) { writer in
            var offset = start
            let piece = slow ? 64 * 1024 : 256 * 1024
            while offset < size {
                if let dropAt, offset >= dropAt { throw DroppedOnPurpose() }
                if let holdAt, offset >= holdAt {
                    // Until the client goes (its writes fail) or a minute has passed.
                    for _ in 0..<600 { try await Task.sleep(for: .milliseconds(100)) }
                    throw DroppedOnPurpose()
                }
                let end = min(size, offset + piece, dropAt ?? size, holdAt ?? size)
                var buffer = ByteBuffer()
                buffer.writeBytes((offset..<end).map(byte))
                try await writer.write(buffer)
                offset = end
                if slow { try await Task.sleep(for: .milliseconds(50)) }
            }
            try await writer.finish(nil)
        }
        return Response(status: partial ? .partialContent : .ok, headers: headers, body: body)
    }

    /// A port nothing listens on now: bound, then released.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw ServerDidNotStart() }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

struct ServerDidNotStart: Error {}

/// The requests a TransferServer got.
final class RequestLog: Sendable {
    let entries = Mutex<[String]>([])
}

/// Runs the server's tasks on a concurrent dispatch queue (threads of its own, made as needed).
final class ServerExecutor: TaskExecutor {
    static let shared = ServerExecutor()
    private let queue = DispatchQueue(label: "transfer-server", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
struct DroppedOnPurpose: Error {}
