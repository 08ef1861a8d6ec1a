#if canImport(Glibc)
import Glibc
#endif
import AppHostSystem

/// Copies an app's standard output and error to the host's standard error, line by line, as
/// `Name[pid]: line`, in bounded memory and linear time whatever the app writes, its control
/// characters escaped (TerminalText).
///
/// A flood cannot starve the host: each turn reads at most `budget` bytes, and the event source
/// fires again for the rest after the host's other work. A line longer than `maximumLineLength`
/// is forwarded in pieces, each marked as cut, so the buffer never grows past that.
final class OutputForwarder {
    static let maximumLineLength = 16 * 1024
    /// Bytes read per turn: about a millisecond of work, so commands wait at most that long.
    static let budget = 64 * 1024
    static let cutMarker = " [line cut at \(maximumLineLength) bytes]"

    let fd: Int32
    private var prefix: [UInt8]
    private let name: String
    private let forward: Bool
    /// The unfinished line (at most `maximumLineLength` bytes).
    private var line: [UInt8] = []
    /// The last line that reads like a fatal-error message of the Swift runtime, and how many
    /// lines came after it (the runtime may print a stack trace of its own after it).
    private var fatalMessage: String?
    private var linesSinceFatalMessage = 0
    /// How many lines after it a message still counts as the crash's.
    static let fatalMessageReach = 64
    /// The longest message kept.
    static let maximumFatalMessageLength = 2048

    /// `fd`: the non-blocking read end of the app's output pipe. With `forward` false, output is
    /// read and dropped (so the app never blocks on a full pipe).
    init(fd: Int32, name: String, pid: pid_t, forward: Bool) {
        self.fd = fd
        self.name = name
        prefix = TerminalText.escaping(Array("\(name)[\(pid)]: ".utf8))
        self.forward = forward
    }

    /// Names the app process by `pid` from now on (in a PID namespace, once it is known).
    func rename(pid: pid_t) {
        prefix = TerminalText.escaping(Array("\(name)[\(pid)]: ".utf8))
    }

    /// Reads up to a budget and forwards every complete line. Returns false once the pipe has
    /// ended (all of the app's processes closed it); the unfinished line is forwarded then.
    func drain() -> Bool {
        // Allocated per turn, not held per app: a host of thousands of apps holds no idle buffers.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var read = 0
        while read < Self.budget {
            switch readSome(fd, into: &buffer) {
            case .bytes(let count):
                read += count
                take(buffer[0..<count])
            case .wouldBlock:
                return true
            case .end:
                flush()
                return false
            }
        }
        return true
    }

    /// At the app's end: what is left in the pipe (a pipe holds 64 KiB unless the app enlarged
    /// it; at most 1 MiB is read), then the unfinished line.
    func finish() {
        for _ in 0..<16 {
            if !drain() { return }  // the end of the pipe: drain flushed
        }
        flush()
    }

    /// Forwards what is left of an unfinished line.
    func flush() {
        if !line.isEmpty { emit(cut: false) }
    }

    private func take(_ bytes: ArraySlice<UInt8>) {
        var rest = bytes[...]
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            append(rest[rest.startIndex..<newline])
            emit(cut: false)
            rest = rest[(newline + 1)...]
        }
        append(rest)
    }

    /// Adds to the unfinished line, forwarding full pieces as they fill.
    private func append(_ bytes: ArraySlice<UInt8>) {
        var rest = bytes
        while line.count + rest.count > Self.maximumLineLength {
            let room = Self.maximumLineLength - line.count
            line.append(contentsOf: rest.prefix(room))
            rest = rest.dropFirst(room)
            emit(cut: true)
        }
        line.append(contentsOf: rest)
    }

    /// The fatal-error message printed last, if few lines came after it: what a crash report
    /// shows as the crash's message. It is whatever the app printed (the runtime prints in the
    /// app's process), so it is the app's own account.
    var recentFatalMessage: String? {
        linesSinceFatalMessage <= Self.fatalMessageReach ? fatalMessage : nil
    }

    /// The runtime's messages: `FILE:LINE: Fatal error: MESSAGE` (fatalError, a nil unwrapped,
    /// an index out of range), `Precondition failed`, `Assertion failed`, and the runtime's own
    /// (exclusivity, casts, retain counts).
    static let fatalMarkers: [[UInt8]] = [
        "Fatal error", "Precondition failed", "Assertion failed", "Fatal access conflict detected",
        "Could not cast value of type", "Simultaneous accesses to",
    ].map { Array($0.utf8) }

    static func isFatalMessage(_ line: [UInt8]) -> Bool {
        line.withUnsafeBufferPointer { bytes in
            fatalMarkers.contains { marker in
                guard bytes.count >= marker.count else { return false }
                for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
                    if marker.indices.allSatisfy({ bytes[start + $0] == marker[$0] }) { return true }
                }
                return false
            }
        }
    }

    private func emit(cut: Bool) {
        // The room of a long line is not kept: most apps print short lines or none.
        defer { line.removeAll(keepingCapacity: line.capacity <= 1024) }
        if Self.isFatalMessage(line) {
            fatalMessage = String(decoding: TerminalText.escaping(line.prefix(Self.maximumFatalMessageLength)), as: UTF8.self)
            linesSinceFatalMessage = 0
        } else if fatalMessage != nil {
            linesSinceFatalMessage += 1
        }
        guard forward else { return }
        var text = prefix
        text.append(contentsOf: TerminalText.escaping(line))
        if cut { text.append(contentsOf: Self.cutMarker.utf8) }
        text.append(UInt8(ascii: "\n"))
        writeStandardError(text)
    }
}
