#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// What a connection to a host's control socket asks for: one line, then the host's answer.
///
///     run LINE                      one line of the command language (README, Commands)
///     events json|text [APP]        every event from now on, until the connection closes
///
/// The host answers in lines: `1 TEXT` is a line the command printed on standard output,
/// `2 TEXT` one on standard error, and `= STATUS` the last (0 done, 1 failed, 2 a request the
/// host could not read).
public enum ControlRequest: Sendable, Equatable {
    case run(String)
    case events(json: Bool, app: String?)

    /// The longest request line the host reads.
    public static let maximumLength = 16 * 1024

    public init?(line: String) {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        switch words.first {
        case "run":
            self = .run(words.count == 2 ? words[1] : "")
        case "events":
            let options = words.count == 2 ? words[1].split(separator: " ").map(String.init) : []
            guard let format = options.first, format == "json" || format == "text", options.count <= 2 else { return nil }
            self = .events(json: format == "json", app: options.count == 2 ? options[1] : nil)
        default:
            return nil
        }
    }

    public var line: String {
        switch self {
        case .run(let command): "run \(command.replacingOccurrences(of: "\n", with: " "))"
        case .events(let json, let app): "events \(json ? "json" : "text")\(app.map { " \($0)" } ?? "")"
        }
    }
}

/// One line of a host's answer.
enum ControlLine {
    case output(String)
    case error(String)
    case status(Int32)

    var encoded: String {
        switch self {
        case .output(let text): "1 \(text.replacingOccurrences(of: "\n", with: " "))\n"
        case .error(let text): "2 \(text.replacingOccurrences(of: "\n", with: " "))\n"
        case .status(let status): "= \(status)\n"
        }
    }

    init?(_ line: Substring) {
        if line.hasPrefix("1 ") {
            self = .output(String(line.dropFirst(2)))
        } else if line.hasPrefix("2 ") {
            self = .error(String(line.dropFirst(2)))
        } else if line.hasPrefix("= "), let status = Int32(line.dropFirst(2)) {
            self = .status(status)
        } else {
            return nil
        }
    }
}

/// The control socket's address. A path too long for `sun_path` (108 bytes) is reached through
/// the control directory's descriptor instead (`/proc/self/fd/N/host.sock`), which `directory`
/// must then hold open.
struct ControlAddress: ~Copyable {
    private(set) var address = sockaddr_un()
    private var directory: Int32 = -1

    init(_ paths: ControlPaths) throws(SystemError) {
        address.sun_family = sa_family_t(AF_UNIX)
        var path = paths.socket.path
        if path.utf8.count >= MemoryLayout.size(ofValue: address.sun_path) {
            directory = try valueOrErrno("open \(paths.directory.path)") { apphost_open_directory_path(paths.directory.path) }
            path = "/proc/self/fd/\(directory)/\(paths.socket.lastPathComponent)"
        }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
    }

    deinit { if directory >= 0 { closeIgnoringErrors(directory) } }

    /// Calls `body` with the address as `bind` and `connect` take it.
    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

/// Reads lines from a blocking socket.
struct LineReader {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline; nil at the end, on an error, or past `limit` bytes.
    mutating func next(limit: Int = ControlRequest.maximumLength) -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard buffer.count <= limit else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }
}

/// Writes all of `text`, without SIGPIPE; false once the peer has gone.
func sendAll(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent < 0 && errno == EINTR { continue }
        guard sent > 0 else { return false }
        bytes = bytes.dropFirst(sent)
    }
    return true
}

/// The running host's control key: 32 random bytes in hex, written to `STATE/control/host.key`
/// (0600) as the host starts listening, removed when it stops. A request line begins with it
/// and a space. The socket's uid check keeps other users out; the key keeps out the host's own
/// apps, which may share its uid (a host that is not root) but cannot read its state directory.
public struct ControlKey: Sendable, Equatable {
    let hex: String

    /// A new key, written where `url` says (replacing a dead host's).
    static func make(at url: URL) throws(SystemError) -> ControlKey {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        unlink(url.path)
        let fd = try valueOrErrno("open \(url.path)") { open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        defer { closeIgnoringErrors(fd) }
        let line = Array((hex + "\n").utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count else { throw SystemError("write \(url.path)", errno: errno) }
        return ControlKey(hex: hex)
    }

    /// The key of the host running on this state directory, or one line saying why not.
    static func read(at url: URL) throws(SupervisorError) -> ControlKey {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            let error = access(url.path, F_OK) == 0 ? EACCES : ENOENT
            throw SupervisorError(
                error == EACCES
                    ? "cannot read the host's control key \(url.path): only its user and root may control it"
                    : "the host's control key \(url.path) is missing: the host is ending, or it is older than this apphost",
                code: .unavailable, errno: error)
        }
        return ControlKey(hex: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `line` behind the key, as sent.
    func locking(_ line: String) -> String { "\(hex) \(line)" }

    /// The request after the key, or nil if `line` does not begin with it.
    func unlocking(_ line: String) -> String? {
        let prefix = hex + " "
        guard line.utf8.count >= prefix.utf8.count else { return nil }
        // Compared in full whatever differs first (no timing of how much matched).
        let same = zip(line.utf8, prefix.utf8).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        return same ? String(line.dropFirst(prefix.count)) : nil
    }
}
