#if canImport(Glibc)
import Glibc
#endif

/// What one read (or send) of a descriptor gave.
package enum ReadOutcome: Equatable {
    /// This many bytes: read into the start of the buffer, or sent.
    case bytes(Int)
    /// Nothing now (a non-blocking descriptor is drained, or full).
    case wouldBlock
    /// The end of the stream, or an error that ends it.
    case end
}

/// Reads once into `buffer`, retrying EINTR.
package func readSome(_ fd: Int32, into buffer: inout [UInt8]) -> ReadOutcome {
    while true {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if count > 0 { return .bytes(count) }
        if count == 0 { return .end }
        switch Glibc.errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        default: return .end
        }
    }
}

/// Sends once from `bytes` on a non-blocking socket, retrying EINTR, without SIGPIPE: `.end`
/// once the peer has gone.
package func sendSome(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> ReadOutcome {
    while true {
        let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count >= 0 { return .bytes(count) }
        switch Glibc.errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        default: return .end
        }
    }
}

/// Writes all of `bytes`, retrying EINTR and short writes.
package func writeAll(_ fd: Int32, _ bytes: [UInt8], call: @autoclosure () -> String = "write") throws(SystemError) {
    var offset = 0
    while offset < bytes.count {
        offset += try valueOrErrno(call()) {
            bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        }
    }
}

/// The whole of a small file (a /proc or cgroup file), "" if it cannot be read.
package func readSmallFile(_ path: String) -> String {
    guard let fd = try? valueOrErrno("open \(path)", { open(path, O_RDONLY | O_CLOEXEC) }) else { return "" }
    defer { closeIgnoringErrors(fd) }
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    while case .bytes(let count) = readSome(fd, into: &buffer) { result += buffer[0..<count] }
    return String(decoding: result, as: UTF8.self)
}

/// Writes `value` to a control file (cgroup, /proc) in one write, as the kernel expects.
package func writeControlFile(_ path: String, _ value: String) throws(SystemError) {
    let fd = try valueOrErrno("open \(path)") { open(path, O_WRONLY | O_CLOEXEC) }
    defer { closeIgnoringErrors(fd) }
    try valueOrErrno("write \(value) to \(path)") { value.withCString { Glibc.write(fd, $0, strlen($0)) } }
}
