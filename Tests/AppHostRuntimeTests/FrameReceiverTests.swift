import AppHostProtocol
import AppHostSystem
import CAppHostShims
import Glibc
import Testing
@testable import AppHostRuntime

/// The receiving side of the control channel over a real socketpair: which frame a descriptor
/// came with, the descriptor allowance, budgets, and the end of the stream.
@Suite struct FrameReceiverTests {
    /// A connected pair: the host's end (non-blocking, read by a FrameReceiver) and the app's.
    private final class Pair {
        let host: Int32
        var app: Int32

        init() throws {
            var fds: [Int32] = [-1, -1]
            try valueOrErrno("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            host = fds[0]
            app = fds[1]
        }

        func send(_ message: AppMessage, passing descriptor: Int32? = nil) throws {
            let channel = ControlChannel(fd: app)
            if let descriptor {
                try channel.send(body: WireCoding.encode(message), passing: descriptor)
            } else {
                try channel.send(body: WireCoding.encode(message))
            }
        }

        /// The app's end goes: the host reads the end of the stream.
        func closeApp() {
            close(app)
            app = -1
        }

        deinit {
            close(host)
            if app >= 0 { close(app) }
        }
    }

    private func openDescriptors() -> Int { directoryEntries("/proc/self/fd").count }

    @Test func theListenerComesWithItsFrameNotWithTheOneBefore() throws {
        let pair = try Pair()
        let listener = apphost_eventfd()
        defer { close(listener) }
        // Both in the socket before the host reads: one read may take hello and sandboxed.
        try pair.send(.hello(protocolVersion: 1, pid: 1))
        try pair.send(.sandboxed(listener: true, landlockABI: 0, uid: 0, seconds: 0), passing: listener)
        var receiver = FrameReceiver(channel: ControlChannel(fd: pair.host))
        receiver.descriptorAllowance = 1
        var frames: [ReceivedFrame] = []
        while frames.count < 2 {
            let batch = receiver.receive(budget: 64 * 1024)
            #expect(batch.end == nil)
            frames += batch.frames
        }
        #expect(frames[0].descriptors.isEmpty)
        #expect(frames[1].descriptors.count == 1)
        frames[1].descriptors.forEach(closeIgnoringErrors)
    }

    /// Regression: descriptors attached to every byte of valid frames were all kept until the
    /// app ended, and the host ran out of descriptors.
    @Test func aDescriptorBeyondTheAllowanceEndsTheStreamAndNothingIsKept() throws {
        signal(SIGPIPE, SIG_IGN)
        let pair = try Pair()
        let frame = Framing.frame(WireCoding.encode(AppMessage.warning("one byte at a time")))
        // Each byte carries the read end of a pipe; once every copy of a read end is closed, a
        // write to its write end fails with EPIPE: that proves the receiver kept none.
        var writeEnds: [Int32] = []
        for byte in frame.prefix(5) {
            var ends: [Int32] = [-1, -1]
            try valueOrErrno("pipe") { pipe(&ends) }
            _ = withUnsafeBytes(of: byte) { apphost_send_with_fd(pair.app, $0.baseAddress, 1, ends[0]) }
            close(ends[0])
            writeEnds.append(ends[1])
        }
        defer { writeEnds.forEach { close($0) } }
        var receiver = FrameReceiver(channel: ControlChannel(fd: pair.host))
        let batch = receiver.receive(budget: 64 * 1024)
        #expect(batch.frames.isEmpty)
        #expect(batch.end == .tooManyDescriptors(1))
        var byte: UInt8 = 0
        #expect(write(writeEnds[0], &byte, 1) == -1 && errno == EPIPE, "the descriptor that arrived was closed at once")
    }

    /// Regression: an end found with frames was kept for a later call that might never come.
    @Test func framesBeforeAnOversizeFrameComeWithTheEndInOneBatch() throws {
        let pair = try Pair()
        try pair.send(.warning("first"))
        var oversize = withUnsafeBytes(of: UInt64(Framing.maximumBodyLength + 1).littleEndian, Array.init)
        oversize += [0x7b]
        _ = oversize.withUnsafeBytes { write(pair.app, $0.baseAddress, $0.count) }
        var receiver = FrameReceiver(channel: ControlChannel(fd: pair.host))
        var batch = receiver.receive(budget: 64 * 1024)
        if batch.end == nil { batch = receiver.receive(budget: 64 * 1024) }
        #expect(batch.end == .framing(.oversize(UInt64(Framing.maximumBodyLength + 1))))
    }

    @Test func aFrameBudgetLeavesTheRestBufferedAndSaysSo() throws {
        let pair = try Pair()
        for index in 0..<10 { try pair.send(.taskEnded(id: UInt64(index))) }
        var receiver = FrameReceiver(channel: ControlChannel(fd: pair.host))
        let first = receiver.receive(budget: 64 * 1024, maximumFrames: 4)
        #expect(first.frames.count == 4)
        #expect(receiver.hasBufferedFrames, "the reader must come back without waiting for the socket")
        var rest = 0
        while receiver.hasBufferedFrames { rest += receiver.receive(budget: 64 * 1024, maximumFrames: 4).frames.count }
        #expect(rest == 6)
    }

    @Test func aPeerThatClosesIsTheEndAfterItsLastFrames() throws {
        let pair = try Pair()
        try pair.send(.warning("last words"))
        pair.closeApp()
        var receiver = FrameReceiver(channel: ControlChannel(fd: pair.host))
        var frames = 0
        var end: FrameReceiver.End?
        while end == nil {
            let batch = receiver.receive(budget: 64 * 1024)
            frames += batch.frames.count
            end = batch.end
        }
        #expect(frames == 1)
        #expect(end == .closed)
    }

    @Test func appTextIsCutAndMarked() {
        #expect("short".cut(to: 4096) == "short")
        let long = String(repeating: "x", count: 5000)
        #expect(long.cut(to: 4096) == String(repeating: "x", count: 4096) + " [cut at 4096 bytes]")
    }
}
