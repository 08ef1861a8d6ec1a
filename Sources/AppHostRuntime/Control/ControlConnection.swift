#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import AppHostSystem

/// One connection to the control socket (a non-blocking socket), served on the server's queue
/// from readiness alone; everything here is touched on that queue only, except `put`.
///
/// Its request line is read as it arrives. What it is sent goes at once if the socket takes it;
/// what does not waits in the outbox and goes when the socket is writable again. The end of the
/// client's input is seen when it comes (a read of nothing): a follower has then gone, so the
/// connection ends at once, not at its next event.
///
/// libdispatch watches the descriptor until a source's cancellation is complete, and a
/// descriptor closed under it (or reused by then) is an error it crashes on; so the descriptor
/// is closed after the last source's cancel handler, never before.
final class ControlConnection: @unchecked Sendable {
    /// What the client asked for, once its request line has come.
    enum Purpose {
        case command
        case follower(json: Bool, app: String?)
    }

    var purpose: Purpose?
    /// Called once, when the connection has ended.
    var ended: (ControlConnection) -> Void = { _ in }

    private let fd: Int32
    private let queue: DispatchQueue
    private var outbox = Outbox(capacity: nil)
    /// Encoded lines a send left over: they go before anything the outbox holds.
    private var unsent: ArraySlice<UInt8> = []
    /// The request line so far; nil once it has come, or never will.
    private var request: [UInt8]?
    /// Given the request line; let go once called, as it holds the connection.
    private var received: ((String?) -> Void)?
    private var reading: (any DispatchSourceRead)?
    /// Made the first time the socket is full, suspended while there is nothing to send.
    private var writing: (any DispatchSourceWrite)?
    private var writingSuspended = false
    /// Sources whose cancellation has not yet completed.
    private var sources = 0
    /// A status line has been queued: the connection ends once it has been sent.
    private var answered = false
    private var isOpen = true

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.queue = queue
    }

    /// Reads the request line as it arrives and hands it to `received`: nil if the client
    /// closes, sends more than `ControlRequest.maximumLength` bytes, or takes longer than
    /// `patience`, before a newline. What it sends after the line is read and ignored.
    func readRequest(within patience: DispatchTimeInterval, received: @escaping (String?) -> Void) {
        request = []
        self.received = received
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in readable() }
        adopt(source)
        reading = source
        source.resume()
        queue.asyncAfter(deadline: .now() + patience) { [weak self] in
            guard let self, isOpen, request != nil else { return }
            deliver(nil)
        }
    }

    /// Makes the connection a follower of events: its outbox keeps the newest `capacity` lines.
    func follow(json: Bool, app: String?, capacity: Int) {
        purpose = .follower(json: json, app: app)
        outbox = Outbox(capacity: capacity)
    }

    /// Sends `line` from any thread, in the order of the calls.
    func put(_ line: ControlLine) {
        queue.async { [self] in send(line) }
    }

    /// Sends `line`, or queues it if the socket is full. A status line is the last: the
    /// connection ends once it has gone. Nothing is sent once the connection has ended.
    func send(_ line: ControlLine) {
        guard isOpen, !answered else { return }
        if case .status = line { answered = true }
        outbox.put(line)
        let waitingForWritable = writing != nil && !writingSuspended
        if !waitingForWritable { flush() }
    }

    private func readable() {
        guard isOpen else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        switch readSome(fd, into: &chunk) {
        case .wouldBlock:
            return
        case .end:
            endOfInput()
        case .bytes(let count):
            guard request != nil else { return }
            request!.append(contentsOf: chunk[..<count])
            if let newline = request!.firstIndex(of: UInt8(ascii: "\n")) {
                deliver(String(decoding: request![..<newline], as: UTF8.self))
            } else if request!.count > ControlRequest.maximumLength {
                deliver(nil)
            }
        }
    }

    /// The client has shut its side (or gone). A follower has gone: it sends nothing after its
    /// request. A command's answer is still sent: a client may shut its writing side once it
    /// has asked, and a client that has gone is found out when the answer cannot be sent.
    private func endOfInput() {
        if request != nil { deliver(nil) }
        if case .follower = purpose {
            end()
        } else {
            reading?.cancel()  // else it would be readable for ever
        }
    }

    private func deliver(_ line: String?) {
        let received = self.received
        self.received = nil
        request = nil
        received?(line)
    }

    /// Sends what waits until the socket is full, then waits for it to be writable; ends the
    /// connection once its answer has gone, or once the client has gone.
    private func flush() {
        guard isOpen else { return }
        while isOpen {
            if unsent.isEmpty {
                guard let bytes = outbox.take(upTo: 64 * 1024) else { break }
                unsent = bytes[...]
            }
            switch sendSome(fd, unsent) {
            case .bytes(let count):
                unsent = unsent.dropFirst(count)
            case .wouldBlock:
                waitUntilWritable()
                return
            case .end:
                end()
                return
            }
        }
        if let writing, !writingSuspended {
            writing.suspend()
            writingSuspended = true
        }
        if answered { end() }
    }

    private func waitUntilWritable() {
        if let writing {
            if writingSuspended {
                writing.resume()
                writingSuspended = false
            }
            return
        }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in flush() }
        adopt(source)
        writing = source
        source.resume()
    }

    private func adopt(_ source: any DispatchSourceProtocol) {
        sources += 1
        source.setCancelHandler { [self] in
            sources -= 1
            if sources == 0 && !isOpen { closeIgnoringErrors(fd) }
        }
    }

    /// Stops serving: the sources are cancelled, and the descriptor closed after the last.
    private func end() {
        guard isOpen else { return }
        isOpen = false
        reading?.cancel()
        if let writing {
            writing.cancel()
            if writingSuspended { writing.resume() }  // a suspended source never finishes its cancellation
        }
        if sources == 0 { closeIgnoringErrors(fd) }
        ended(self)
    }
}

/// Where a command run over the control socket prints: as on the host's standard output and
/// standard error.
public struct ControlReply: Sendable {
    let connection: ControlConnection

    public func output(_ line: String) { connection.put(.output(line)) }
    public func error(_ line: String) { connection.put(.error(line)) }
}

/// Lines waiting for a connection's socket. With a capacity (a follower of events), the oldest
/// are dropped past it and the follower is told how many, ahead of the lines that follow.
private struct Outbox {
    private var lines: [ControlLine] = []
    /// Where the waiting lines begin in `lines`: dropping the oldest moves it, not the lines.
    private var head = 0
    private var dropped = 0
    private let capacity: Int?

    init(capacity: Int?) { self.capacity = capacity }

    mutating func put(_ line: ControlLine) {
        if let capacity, lines.count - head >= capacity {
            head += 1
            dropped += 1
            compact()
        }
        lines.append(line)
    }

    /// The waiting lines, encoded, up to about `limit` bytes; nil if none wait.
    mutating func take(upTo limit: Int) -> [UInt8]? {
        guard head < lines.count else { return nil }
        var bytes: [UInt8] = []
        if dropped > 0 {
            bytes += ControlLine.error("apphost: \(dropped) events dropped (this follower read too slowly)").encoded.utf8
            dropped = 0
        }
        while head < lines.count && bytes.count < limit {
            bytes += lines[head].encoded.utf8
            head += 1
        }
        compact()
        return bytes
    }

    /// Forgets the lines before `head` once they are half the array or more, so that each line
    /// is moved once at most on average.
    private mutating func compact() {
        if head == lines.count {
            lines.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= lines.count {
            lines.removeFirst(head)
            head = 0
        }
    }
}
