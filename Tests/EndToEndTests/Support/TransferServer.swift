import Foundation
import Synchronization

/// A real HTTP/1.1 server on the loopback interface for the background-transfer tests, started
/// by each test and stopped with it: plain sockets and a thread per connection, nothing to build.
/// Each response closes its connection. Its resources:
///   GET /files/SIZE        SIZE bytes (byte i is i % 251), with an ETag; honours Range
///   GET /drop/SIZE         the same, but a request without Range gets half and a closed connection
///   GET /slow/SIZE         the same, sent in 64 KiB pieces 50 ms apart (honours Range)
///   GET /held/SIZE         the first half, then nothing more on that connection until it closes
///                          (a request with a Range gets the rest at once): a transfer that is
///                          surely under way, whatever the machine's load
///   GET /gated/SIZE        the first half, then the rest once the test opens the gate
///                          (`openGate`): a transfer that ends when the test says
///   GET /missing           404
///   GET /redirect?to=URL   302 to URL
///   PUT or POST /upload    answers "received N bytes"
///   GET /basic/SIZE, GET /digest/SIZE   behind authentication (TransferServer+Authentication)
/// Every request is recorded with its Range header (and its X-Episode header, if any).
final class TransferServer: Sendable {
    let port: Int
    private let listener: Int32
    private let log = RequestLog()

    init() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 128) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listener >= 0, bound else { throw ServerDidNotStart() }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let log = log
        Thread { Self.acceptConnections(listener, log) }.start()
    }

    deinit {
        // Wakes the accepting thread, which closes the socket.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// "GET /drop/1000 range=bytes=500-", in the order they came.
    var requests: [String] { log.entries.withLock { $0 } }

    /// Lets every /gated response send its second half.
    func openGate() { log.gate.withLock { $0 = true } }

    /// The byte at `index` of every resource.
    static func byte(_ index: Int) -> UInt8 { UInt8(index % 251) }

    static func content(_ size: Int) -> Data { Data((0..<size).map(byte)) }

    private static func acceptConnections(_ listener: Int32, _ log: RequestLog) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                close(listener)
                return
            }
            Thread { Self.serve(Connection(fd: connection), log: log, gate: { log.gate.withLock { $0 } }) }.start()
        }
    }

    private static func serve(_ connection: Connection, log: RequestLog, gate: @escaping @Sendable () -> Bool) {
        defer { close(connection.fd) }
        guard let request = connection.readRequest() else { return }
        let range = request.headers["range"]
        let parts = request.target.split(separator: "/", omittingEmptySubsequences: true)
        if request.method == "GET", parts.count == 2, let size = Int(parts[1]), ["basic", "digest"].contains(parts[0]) {
            let scheme = String(parts[0])
            let verdict = Self.authenticated(scheme: scheme, method: request.method, target: request.target, authorization: request.headers["authorization"])
            log.entries.withLock { $0.append("GET \(request.target) auth=\(verdict.map { $0 ? "ok" : "wrong" } ?? "none")") }
            guard verdict == true else {
                let answer = Data("who are you?".utf8)
                connection.send(head: "401 Unauthorized", ["WWW-Authenticate": Self.challenge(scheme: scheme), "Content-Length": "\(answer.count)"])
                connection.send(answer)
                return
            }
            sendResource(connection, size: size, range: range, kind: "slow", gate: gate)
        } else if request.method == "GET", parts.count == 2, let size = Int(parts[1]), ["files", "drop", "slow", "held", "gated"].contains(parts[0]) {
            let episode = request.headers["x-episode"].map { " x-episode=\($0)" } ?? ""
            log.entries.withLock { $0.append("GET \(request.target)\(range.map { " range=\($0)" } ?? "")\(episode)") }
            sendResource(connection, size: size, range: range, kind: String(parts[0]), gate: gate)
        } else if request.method == "GET", request.target.hasPrefix("/redirect?to=") {
            log.entries.withLock { $0.append("GET \(request.target)") }
            let location = String(request.target.dropFirst("/redirect?to=".count)).removingPercentEncoding ?? ""
            connection.send(head: "302 Found", ["Location": location, "Content-Length": "0"])
        } else if ["PUT", "POST"].contains(request.method), request.target == "/upload" {
            let body = connection.readBody(length: Int(request.headers["content-length"] ?? "") ?? 0)
            log.entries.withLock { $0.append("\(request.method) /upload \(body)") }
            let answer = Data("received \(body) bytes".utf8)
            connection.send(head: "200 OK", ["Content-Length": "\(answer.count)", "Content-Type": "text/plain"])
            connection.send(answer)
        } else {
            log.entries.withLock { $0.append("\(request.method) \(request.target)") }
            let answer = Data("no such episode".utf8)
            connection.send(head: "404 Not Found", ["Content-Length": "\(answer.count)"])
            connection.send(answer)
        }
    }

    private static func sendResource(_ connection: Connection, size: Int, range: String?, kind: String, gate: @Sendable () -> Bool) {
        let first = range.flatMap { $0.hasPrefix("bytes=") ? Int($0.dropFirst(6).split(separator: "-").first ?? "") : nil }
        let start = min(first ?? 0, size)
        let partial = start > 0
        var headers = ["ETag": "\"v1\"", "Accept-Ranges": "bytes", "Content-Length": "\(size - start)"]
        if partial { headers["Content-Range"] = "bytes \(start)-\(size - 1)/\(size)" }
        guard connection.send(head: partial ? "206 Partial Content" : "200 OK", headers) else { return }
        let stopAt = (kind == "drop" || kind == "held") && !partial ? size / 2 : size
        let piece = kind == "slow" ? 64 * 1024 : 256 * 1024
        var offset = start
        while offset < stopAt {
            // A gated response's second half waits for the gate (a minute at most).
            if kind == "gated" && offset >= size / 2 {
                _ = becomesTrue(within: 60, gate)
            }
            let end = min(stopAt, offset + (kind == "gated" ? min(piece, max(1, size / 2)) : piece))
            guard connection.send(Data((offset..<end).map(byte))) else { return }
            offset = end
            if kind == "slow" { usleep(50_000) }  // the resource's pace (its point), not a wait for anything
        }
        // A held response waits for the client to go (or a minute), then the connection closes.
        if kind == "held" && !partial { connection.waitForClose(seconds: 60) }
    }

    /// A port nothing listens on now: bound, then released.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw ServerDidNotStart() }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}

struct ServerDidNotStart: Error {}

/// The requests a TransferServer got.
final class RequestLog: Sendable {
    /// Whether /gated responses may send their second half (`openGate`).
    let gate = Mutex(false)
    let entries = Mutex<[String]>([])
}

/// One accepted connection: its request's head read byte by byte up to the blank line.
private struct Connection {
    let fd: Int32

    struct Request {
        var method: String
        var target: String
        /// Lower-cased names.
        var headers: [String: String]
    }

    func readRequest() -> Request? {
        var head = [UInt8]()
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]) {
            guard head.count < 64 * 1024, recv(fd, &byte, 1, 0) == 1 else { return nil }
            head.append(byte)
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ")
        guard first.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(method: String(first[0]), target: String(first[1]), headers: headers)
    }

    /// Reads and counts a body of `length` bytes.
    func readBody(length: Int) -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while total < length {
            let count = recv(fd, &buffer, min(buffer.count, length - total), 0)
            guard count > 0 else { break }
            total += count
        }
        return total
    }

    @discardableResult
    func send(head status: String, _ headers: [String: String]) -> Bool {
        let lines = ["HTTP/1.1 \(status)"] + headers.map { "\($0.key): \($0.value)" } + ["Connection: close", "", ""]
        return send(Data(lines.joined(separator: "\r\n").utf8))
    }

    @discardableResult
    func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let sent = Glibc.send(fd, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                done += sent
            }
            return true
        }
    }

    func waitForClose(seconds: Int) {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, Int32(seconds * 1000))
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix) }
}
