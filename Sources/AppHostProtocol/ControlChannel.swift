#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
@_implementationOnly import CAppHostShims

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
    package func send(body: [UInt8], nonBlocking: Bool = false) throws(SystemError) {
        try sendFrame(Framing.frame(body), passing: nil, nonBlocking: nonBlocking)
    }

    /// Writes one whole frame with `descriptor` attached to its first byte (SCM_RIGHTS).
    package func send(body: [UInt8], passing descriptor: Int32) throws(SystemError) {
        try sendFrame(Framing.frame(body), passing: descriptor, nonBlocking: false)
    }

    private func sendFrame(_ bytes: [UInt8], passing descriptor: Int32?, nonBlocking: Bool) throws(SystemError) {
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
/// Descriptors are the scarce resource a hostile peer can exhaust: reading stops at each read
/// that brings one, so its frame is judged before more arrive, and no more than
/// `descriptorAllowance` are held for an incomplete frame: one more and every descriptor held
/// is closed at once and reading ends with `.tooManyDescriptors`.
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

    /// What one call gave: frames in order, then, if reading has stopped for good, why.
    package struct Batch {
        package var frames: [ReceivedFrame] = []
        package var end: End?
    }

    private let channel: ControlChannel
    private var decoder = FrameDecoder()
    /// Stream offsets: of all bytes received, and of the next frame's first byte.
    private var received = 0
    private var frameStart = 0
    private var descriptors: [(offset: Int, fd: Int32)] = []
    private var end: End?
    /// How many descriptors may be held while their frame is incomplete. Complete frames are
    /// handed out with theirs, for the reader to judge.
    package var descriptorAllowance = 0
    /// The most one read takes. Its space is allocated per call, not held: a host reads the
    /// sockets of thousands of apps.
    private static let readLength = 64 * 1024

    package init(channel: ControlChannel) { self.channel = channel }

    /// Whether complete frames are already buffered: the reader must call again even if the
    /// socket has nothing new (it stopped at `maximumFrames`).
    package var hasBufferedFrames: Bool { decoder.hasCompleteFrame }

    /// Reads up to `budget` bytes of what is available and returns at most `maximumFrames`
    /// complete frames, and the end of the stream once it has come (again on every later call).
    package mutating func receive(budget: Int, maximumFrames: Int = .max) -> Batch {
        var batch = Batch()
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: min(budget, Self.readLength)) { buffer in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: 8) { descriptorBuffer in
                read(into: UnsafeMutableRawBufferPointer(buffer), descriptorBuffer: descriptorBuffer, budget: budget)
            }
        }
        do {
            while end == nil || end == .closed, batch.frames.count < maximumFrames, let body = try decoder.next() {
                let frameEnd = frameStart + Framing.headerLength + body.count
                let carried = descriptors.filter { $0.offset < frameEnd }.map(\.fd)
                descriptors.removeAll { $0.offset < frameEnd }
                frameStart = frameEnd
                batch.frames.append(ReceivedFrame(body: body, descriptors: carried))
            }
            if end == .closed, !decoder.hasCompleteFrame, decoder.pendingByteCount > 0 {
                end = .framing(.closedMidFrame(decoder.pendingByteCount))
            }
        } catch {
            end = .framing(error)
        }
        if end == nil, descriptors.count > descriptorAllowance { end = .tooManyDescriptors(descriptors.count) }
        // At the end, frames still buffered are the peer's last words only if the stream simply
        // closed; after a violation nothing more is read.
        if end != nil && end != .closed { closeDescriptors() }
        batch.end = decoder.hasCompleteFrame && end == .closed ? nil : end
        return batch
    }

    /// Reads what is available (at most `budget` bytes) into the decoder, through `buffer`.
    private mutating func read(into buffer: UnsafeMutableRawBufferPointer, descriptorBuffer: UnsafeMutableBufferPointer<Int32>, budget: Int) {
        var read = 0
        reading: while end == nil && read < budget && !decoder.hasCompleteFrame {
            var count: Int32 = 0
            let got: Int
            do {
                got = try valueOrErrno("recvmsg") {
                    apphost_receive_with_fds(
                        channel.fd, buffer.baseAddress, min(buffer.count, budget - read), descriptorBuffer.baseAddress,
                        Int32(descriptorBuffer.count), &count)
                }
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                break reading
            } catch {
                end = .closed
                break reading
            }
            // A read ends right after the message (sendmsg) that carried descriptors, so they
            // belong with its last byte.
            for fd in descriptorBuffer.prefix(Int(count)) { descriptors.append((received + max(got, 1) - 1, fd)) }
            guard got > 0 else {
                end = .closed
                break
            }
            decoder.append(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            received += got
            read += got
            // Descriptors are judged with their frame before any more is read, so a peer can
            // never make the reader hold more than its allowance.
            if count > 0 { break }
        }
    }

    /// Closes every descriptor held for an unfinished frame.
    package mutating func closeDescriptors() {
        descriptors.forEach { closeIgnoringErrors($0.fd) }
        descriptors = []
    }
}
