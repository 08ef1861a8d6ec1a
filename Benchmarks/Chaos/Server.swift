import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The chaos run's HTTP server on 127.0.0.1: a thread per connection, one request each.
///   GET /file/SIZE?pace=MS   SIZE bytes (byte i is i % 251) in 32 KiB pieces MS ms apart;
///                            honours `Range: bytes=N-` (206, Content-Range) with ETag "v1"
///   PUT /upload              reads the body, answers "received N bytes"
/// Small on purpose: it must not be what fails, and a transfer must last long enough (about a
/// second) for a kill to land in the middle of it.
final class ChaosServer: Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 128) == 0 else { throw ChaosError("the chaos server cannot listen: \(String(cString: strerror(errno)))") }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                Thread.detachNewThread { Self.serve(client) }
            }
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    static func byte(_ index: Int) -> UInt8 { UInt8(index % 251) }

    private static func serve(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]) {
            guard read(fd, &byte, 1) == 1, head.count < 16_384 else { return }
            head.append(byte)
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let request = lines[0].split(separator: " ")
        guard request.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = String(request[1])
        if request[0] == "PUT" || request[0] == "POST" {
            var remaining = Int(headers["content-length"] ?? "") ?? 0
            let total = remaining
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while remaining > 0 {
                let count = read(fd, &buffer, min(buffer.count, remaining))
                guard count > 0 else { return }
                remaining -= count
            }
            let body = "received \(total) bytes"
            send(fd, "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
            return
        }
        let path = target.split(separator: "?").first.map(String.init) ?? target
        let query = target.split(separator: "?").dropFirst().first.map(String.init) ?? ""
        let pace = query.hasPrefix("pace=") ? Int(query.dropFirst(5)) ?? 0 : 0
        guard path.hasPrefix("/file/"), let size = Int(path.dropFirst(6)) else {
            send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        let range = headers["range"].flatMap { $0.hasPrefix("bytes=") ? Int($0.dropFirst(6).split(separator: "-").first ?? "") : nil }
        let start = min(range ?? 0, size)
        var response = start > 0 ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n"
        response += "Content-Length: \(size - start)\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\nConnection: close\r\n"
        if start > 0 { response += "Content-Range: bytes \(start)-\(size - 1)/\(size)\r\n" }
        guard send(fd, response + "\r\n") else { return }
        var offset = start
        while offset < size {
            let end = min(size, offset + 32_768)
            let piece = (offset..<end).map { Self.byte($0) }
            guard piece.withUnsafeBytes({ writeAll(fd, $0) }) else { return }
            offset = end
            if pace > 0 { usleep(useconds_t(pace * 1000)) }
        }
    }

    @discardableResult
    private static func send(_ fd: Int32, _ text: String) -> Bool {
        Array(text.utf8).withUnsafeBytes { writeAll(fd, $0) }
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < bytes.count {
            let count = Glibc.send(fd, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            done += count
        }
        return true
    }
}

struct ChaosError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
