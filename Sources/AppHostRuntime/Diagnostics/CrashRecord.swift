import CAppHostCrash

/// One record from an app process's crash or sample handler (CAppHostCrash), checked: it came
/// from the app process, which app code shares, so nothing in it is trusted beyond its shape.
/// It never decides how an app ended; it only says where its threads were.
struct CrashRecord: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A thread crashed with `signal`.
        case crash
        /// The main thread's answer to the host's sample signal.
        case sample
    }

    var kind: Kind
    var signal: Int32
    /// siginfo's si_code and si_addr.
    var code: Int32
    var address: UInt64
    /// The thread as the app process sees it (in its PID namespace).
    var thread: Int32
    var isMainThread: Bool
    var threadName: String
    /// How the frames were found: true for the unwind tables, false for the frame-pointer chain.
    var usedUnwindTables: Bool
    var truncated: Bool
    /// Frame 0 is the interrupted instruction; the others are return addresses.
    var frames: [UInt64]

    /// The size of one datagram.
    static let size = MemoryLayout<apphost_crash_record>.size

    /// Decodes one datagram; nil if it is not a whole, well-formed record.
    init?(datagram bytes: ArraySlice<UInt8>) {
        guard bytes.count == Self.size else { return nil }
        var record = apphost_crash_record()
        withUnsafeMutableBytes(of: &record) { $0.copyBytes(from: bytes) }
        guard record.magic == APPHOST_CRASH_MAGIC, record.frame_count <= APPHOST_CRASH_MAXIMUM_FRAMES else { return nil }
        switch record.kind {
        case UInt32(APPHOST_CRASH_KIND_CRASH.rawValue): kind = .crash
        case UInt32(APPHOST_CRASH_KIND_SAMPLE.rawValue): kind = .sample
        default: return nil
        }
        guard (1...64).contains(record.signal) else { return nil }
        signal = record.signal
        code = record.code
        address = record.address
        thread = record.thread
        isMainThread = record.is_main != 0
        threadName = withUnsafeBytes(of: record.thread_name) { raw in
            String(decoding: TerminalText.escaping(raw.prefix { $0 != 0 }), as: UTF8.self)
        }
        usedUnwindTables = record.unwinder == UInt32(APPHOST_CRASH_UNWINDER_TABLES.rawValue)
        truncated = record.truncated != 0
        let count = Int(record.frame_count)
        frames = withUnsafeBytes(of: record.frames) { raw in
            (0..<count).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) }
        }
    }
}
