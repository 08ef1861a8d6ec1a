#if canImport(Glibc)
import Glibc
#endif
import CAppHostShims

/// One end of the control socket, for both sides: the app process reads it blocking (the
/// runner) or when its main queue is told there is data (the SDK); the host reads it without
/// blocking, a budget at a time. Sending writes whole frames; receiving splits the stream into
/// frames and says which descriptors (SCM_RIGHTS) came with each.
///
/// The channel moves bytes and frames only. What a frame means, and in which state of the
/// conversation it is acceptable, is the reader's business (the host's control-message table).
package struct ControlChannel: Sendable {
    package let fd: Int32

    package init(fd: Int32) { self.fd = fd }

    /// Writes one whole frame carrying `body`, retrying short writes and EINTR. With
    /// `nonBlocking`, a socket the peer stopped reading throws EAGAIN instead of waiting.
    package func send(body: [UInt8], nonBlocking: Bool = false) throws(SystemCallError) {
        try sendFrame(Framing.frame(body), passing: nil, nonBlocking: nonBlocking)
    }

    /// Writes one whole frame with `descriptor` attached to its first byte (SCM_RIGHTS).
    package func send(body: [UInt8], passing descriptor: Int32) throws(SystemCallError) {
        try sendFrame(Framing.frame(body), passing: descriptor, nonBlocking: false)
    }

    private func sendFrame(_ bytes: [UInt8], passing descriptor: Int32?, nonBlocking: Bool) throws(SystemCallError) {
        let flags = Int32(MSG_NOSIGNAL) | (nonBlocking ? Int32(MSG_DONTWAIT) : 0)
        var offset = 0
        if let descriptor {
            offset = try valueOrErrno("sendmsg") {
                bytes.withUnsafeBytes { apphost_send_with_fd(fd, $0.baseAddress, $0.count, descriptor) }
            }
        }
        while offset < bytes.count {
            offset += try valueOrErrno("send") {
                bytes.withUnsafeBytes { raw in Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, flags) }
            }
        }
    }

    /// Reads exactly one frame, blocking. Nil at a clean end of stream.
    package func receive() throws -> [UInt8]? {
        guard let header = try readExactly(Framing.headerLength) else { return nil }
        var length: UInt64 = 0
        for index in 0..<Framing.headerLength { length |= UInt64(header[index]) << (8 * UInt64(index)) }
        guard length <= UInt64(Framing.maximumBodyLength) else { throw FramingError.oversize(length) }
        guard let body = try readExactly(Int(length)) else { throw FramingError.closedMidFrame(Framing.headerLength) }
        return body
    }

    private func readExactly(_ count: Int) throws -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = try valueOrErrno("recv") {
                bytes.withUnsafeMutableBytes { raw in Glibc.recv(fd, raw.baseAddress! + offset, count - offset, 0) }
            }
            if got == 0 {
                if offset == 0 { return nil }
                throw FramingError.closedMidFrame(offset)
            }
            offset += got
        }
        return bytes
    }
}

/// A frame body and the descriptors that arrived with its bytes.
package struct ReceivedFrame {
    package var body: [UInt8]
    /// Descriptors passed (SCM_RIGHTS) with any byte of this frame; the receiver owns them.
    package var descriptors: [Int32]
}

/// The non-blocking receiving side of a control channel: reads what is there, up to a budget,
/// and hands out complete frames with the descriptors that came with them.
///
/// Descriptors are the scarce resource a hostile peer can exhaust, so none is kept beyond
/// `descriptorAllowance`: one more and every descriptor held is closed at once and reading
/// stops with `.tooManyDescriptors`.
package struct FrameReceiver {
    /// Why reading stopped for good.
    package enum End: Error, Equatable {
        /// The peer closed its end (or the socket failed).
        case closed
        /// The peer's bytes are not frames.
        case framing(FramingError)
        /// The peer passed more descriptors than the reader allows.
        case tooManyDescriptors(Int)
    }

    private let channel: ControlChannel
    private var decoder = FrameDecoder()
    /// Stream offsets: of all bytes received, and of the next frame's first byte.
    private var received = 0
    private var frameStart = 0
    private var descriptors: [(offset: Int, fd: Int32)] = []
    /// How many descriptors may be held, waiting for their frame to complete.
    package var descriptorAllowance = 0
    /// Scratch space reused for every read.
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var descriptorBuffer = [Int32](repeating: -1, count: 8)

    package init(channel: ControlChannel) { self.channel = channel }

    /// Reads up to `budget` bytes of what is available and returns the complete frames; throws
    /// when the stream has ended (frames before the end are returned first, on the next call).
    /// Fewer frames than sent may come back: the rest arrive on a later call.
    package mutating func receive(budget: Int) throws(End) -> [ReceivedFrame] {
        if let pendingEnd { throw pendingEnd }
        var end: End?
        var read = 0
        reading: while read < budget {
            var count: Int32 = 0
            let got = buffer.withUnsafeMutableBytes { bytes in
                descriptorBuffer.withUnsafeMutableBufferPointer { fds in
                    apphost_receive_with_fds(
                        channel.fd, bytes.baseAddress, min(bytes.count, budget - read), fds.baseAddress, Int32(fds.count), &count)
                }
            }
            let error = errno
            // A read ends right after the message (sendmsg) that carried descriptors, so they
            // belong with its last byte.
            for fd in descriptorBuffer.prefix(Int(count)) { descriptors.append((received + max(got, 1) - 1, fd)) }
            if descriptors.count > descriptorAllowance {
                end = .tooManyDescriptors(descriptors.count)
                break
            }
            switch got {
            case 1...:
                buffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
                received += got
                read += got
            case 0:
                end = .closed
                break reading
            default:
                if error == EINTR { continue }
                if error != EAGAIN && error != EWOULDBLOCK { end = .closed }
                break reading
            }
        }
        var frames: [ReceivedFrame] = []
        let refused: Bool
        if case .tooManyDescriptors = end { refused = true } else { refused = false }
        if !refused {
            do {
                while let body = try decoder.next() {
                    let frameEnd = frameStart + Framing.headerLength + body.count
                    let carried = descriptors.filter { $0.offset < frameEnd }.map(\.fd)
                    descriptors.removeAll { $0.offset < frameEnd }
                    frameStart = frameEnd
                    frames.append(ReceivedFrame(body: body, descriptors: carried))
                }
                if end == .closed, decoder.pendingByteCount > 0 { end = .framing(.closedMidFrame(decoder.pendingByteCount)) }
            } catch {
                end = .framing(error)
            }
        }
        if let end {
            closeDescriptors()
            // Frames that arrived before the end are still the peer's last words: they are
            // returned now, the end on the next call.
            if frames.isEmpty { throw end }
            pendingEnd = end
        }
        return frames
    }

    /// An end found while frames were still to be handed out; thrown by the next call.
    private var pendingEnd: End?

    /// Closes every descriptor held for an unfinished frame.
    package mutating func closeDescriptors() {
        descriptors.forEach { closeIgnoringErrors($0.fd) }
        descriptors = []
    }
}
