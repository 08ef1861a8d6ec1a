#if canImport(Glibc)
import Glibc
#endif
@_implementationOnly import CAppHostShims

/// The wire format: each frame is an 8-byte little-endian body length and a body: JSON, or one of
/// the compact forms (CompactCoding.swift).
package enum Framing {
    /// Frames longer than this are a protocol violation; a peer that sends one is treated as failed.
    package static let maximumBodyLength = 1 << 20
    package static let headerLength = 8

    /// The bytes of one frame carrying `body`.
    package static func frame(_ body: [UInt8]) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerLength + body.count)
        withUnsafeBytes(of: UInt64(body.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: body)
        return bytes
    }
}

/// Why a peer's bytes could not be read as frames.
package enum FramingError: Error, Equatable, CustomStringConvertible {
    case oversize(UInt64)
    case closedMidFrame(Int)

    package var description: String {
        switch self {
        case .oversize(let length):
            "frame of \(length) bytes exceeds the \(Framing.maximumBodyLength)-byte limit"
        case .closedMidFrame(let pending):
            "connection closed with \(pending) bytes of an unfinished frame"
        }
    }
}

/// Splits a byte stream into frame bodies. Feed it whatever `read` returned.
package struct FrameDecoder {
    private var buffer: [UInt8] = []
    private var start = 0

    package init() {}

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 4096)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete frame body, nil if more bytes are needed.
    package mutating func next() throws(FramingError) -> [UInt8]? {
        let available = buffer.count - start
        guard available >= Framing.headerLength else { return nil }
        var length: UInt64 = 0
        for index in 0..<Framing.headerLength {
            length |= UInt64(buffer[start + index]) << (8 * UInt64(index))
        }
        guard length <= UInt64(Framing.maximumBodyLength) else { throw .oversize(length) }
        let total = Framing.headerLength + Int(length)
        guard available >= total else { return nil }
        let body = Array(buffer[(start + Framing.headerLength)..<(start + total)])
        start += total
        if start > 64 * 1024 {
            buffer.removeFirst(start)
            start = 0
        }
        return body
    }

    /// Whether a whole frame (or an oversize header, which `next` throws for) is buffered.
    package var hasCompleteFrame: Bool {
        let available = buffer.count - start
        guard available >= Framing.headerLength else { return false }
        var length: UInt64 = 0
        for index in 0..<Framing.headerLength { length |= UInt64(buffer[start + index]) << (8 * UInt64(index)) }
        return length > UInt64(Framing.maximumBodyLength) || available >= Framing.headerLength + Int(length)
    }

    /// Bytes of an unfinished frame; non-zero at end of stream means the peer closed mid-frame.
    package var pendingByteCount: Int { buffer.count - start }
}
