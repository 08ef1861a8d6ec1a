#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims
import Synchronization

/// A running host's control socket (`STATE/control/host.sock`, 0600 in a 0700 directory): each
/// connection sends one `ControlRequest` and reads the answer (ControlProtocol.swift). Only the
/// host's own user and root may connect; the peer's credentials are checked too, and anyone
/// else gets one line saying so. Each connection is served on a thread of its own, so a slow or
/// stuck client holds up nothing but itself; events reach it through a bounded outbox.
public final class ControlServer: @unchecked Sendable {
    /// Carries out one command line, printing through the reply; returns its status (0 or 1).
    public typealias Handler = @Sendable (_ command: String, _ reply: ControlReply) async -> Int32
    /// Formats an event for a follower: JSON or text.
    public typealias Formatter = @Sendable (_ event: HostEvent, _ json: Bool) -> String

    private let paths: ControlPaths
    private let listener: Int32
    private let handler: Handler
    private let formatter: Formatter
    /// Why an `events --app` filter names no app, or nil.
    private let unknownApp: @Sendable (String) -> String?
    private let followers = Mutex<[ObjectIdentifier: Follower]>([:])
    /// Commands whose answer is not yet sent.
    private let answering = Mutex(0)

    private struct Follower {
        let outbox: Outbox
        let json: Bool
        let app: String?
    }

    /// Listens on the instance's control socket (the caller holds its `InstanceLock`, so a
    /// socket left there is a dead host's and is replaced).
    public init(
        paths: ControlPaths, handler: @escaping Handler, formatter: @escaping Formatter,
        unknownApp: @escaping @Sendable (String) -> String? = { _ in nil }
    ) throws {
        self.paths = paths
        self.handler = handler
        self.formatter = formatter
        self.unknownApp = unknownApp
        let address = try ControlAddress(paths)
        unlink(paths.socket.path)
        listener = try valueOrErrno("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            // 0600 from the start: no moment at which another user could connect.
            let mask = umask(0o177)
            defer { umask(mask) }
            try valueOrErrno("bind \(paths.socket.path)") { address.withSockaddr { bind(listener, $0, $1) } }
            try valueOrErrno("listen") { listen(listener, 16) }
        } catch {
            closeIgnoringErrors(listener)
            throw error
        }
        let thread = Thread { [self] in acceptConnections() }
        thread.name = "apphost-control"
        thread.start()
    }

    /// Stops listening and removes the socket (the host is ending), then waits up to `grace` for
    /// the commands under way to be answered (a `quit` sent over the socket is one).
    public func close(answering grace: Duration) {
        unlink(paths.socket.path)
        shutdown(listener, Int32(SHUT_RDWR))
        let deadline = ContinuousClock.now + grace
        while answering.withLock({ $0 }) > 0 && ContinuousClock.now < deadline { usleep(1000) }
    }

    /// Hands an event to every follower whose filter it passes; never blocks.
    public func publish(_ event: HostEvent) {
        let current = followers.withLock { Array($0.values) }
        for follower in current {
            if let app = follower.app, !event.concerns(app) { continue }
            follower.outbox.put(.output(formatter(event, follower.json)))
        }
    }

    private func acceptConnections() {
        while true {
            let connection = apphost_accept(listener)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE { continue }
                return
            }
            let thread = Thread { [self] in
                serve(connection)
                closeIgnoringErrors(connection)
            }
            thread.name = "apphost-control-connection"
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        if let refusal = Self.refusal(of: connection) {
            _ = sendAll(connection, ControlLine.error(refusal).encoded + ControlLine.status(1).encoded)
            return
        }
        // A client that connects and says nothing is let go.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var reader = LineReader(fd: connection)
        guard let line = reader.next(), let request = ControlRequest(line: line) else {
            _ = sendAll(connection, ControlLine.error("apphost: unreadable control request").encoded + ControlLine.status(2).encoded)
            return
        }
        switch request {
        case .run(let command):
            answering.withLock { $0 += 1 }
            defer { answering.withLock { $0 -= 1 } }
            let outbox = Outbox(capacity: nil)
            let handler = self.handler
            Task {
                let status = await handler(command, ControlReply(outbox: outbox))
                outbox.put(.status(status))
            }
            while let line = outbox.take(timeout: nil) {
                guard sendAll(connection, line.encoded) else { return }
                if case .status = line { return }
            }
        case .events(let json, let app):
            if let app, let refusal = unknownApp(app) {
                _ = sendAll(connection, ControlLine.error("apphost: ctl: \(refusal)").encoded + ControlLine.status(1).encoded)
                return
            }
            let outbox = Outbox(capacity: 10_000)
            let key = ObjectIdentifier(outbox)
            followers.withLock { $0[key] = Follower(outbox: outbox, json: json, app: app) }
            defer { _ = followers.withLock { $0.removeValue(forKey: key) } }
            while true {
                if let line = outbox.take(timeout: .seconds(1)) {
                    guard sendAll(connection, line.encoded) else { return }
                } else if Self.hasHungUp(connection) {
                    return
                }
            }
        }
    }

    /// Why a peer may not control this host (its uid is neither the host's nor root's), or nil.
    private static func refusal(of connection: Int32) -> String? {
        var uid: UInt32 = 0
        guard apphost_peer_uid(connection, &uid) == 0 else { return "apphost: cannot read the credentials of this connection" }
        let host = geteuid()
        guard uid != host && uid != 0 else { return nil }
        return "apphost: uid \(uid) may not control this host; only its user (uid \(host)) and root may"
    }

    private static func hasHungUp(_ connection: Int32) -> Bool { apphost_peer_has_gone(connection) != 0 }
}

/// Where a command run over the control socket prints: as on the host's standard output and
/// standard error.
public struct ControlReply: Sendable {
    fileprivate let outbox: Outbox

    public func output(_ line: String) { outbox.put(.output(line)) }
    public func error(_ line: String) { outbox.put(.error(line)) }
}

/// Lines waiting for a connection's thread to send them. With a capacity (a follower of
/// events), the oldest are dropped past it and the follower is told how many.
private final class Outbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [ControlLine] = []
    private var dropped = 0
    private let capacity: Int?

    init(capacity: Int?) { self.capacity = capacity }

    func put(_ line: ControlLine) {
        condition.lock()
        if let capacity, lines.count >= capacity {
            lines.removeFirst()
            dropped += 1
        }
        lines.append(line)
        condition.signal()
        condition.unlock()
    }

    /// The next line, waiting at most `timeout` (nil: for ever); nil if none came.
    func take(timeout: Duration?) -> ControlLine? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = timeout.map { Date().addingTimeInterval($0.seconds) }
        while lines.isEmpty {
            if let deadline {
                if !condition.wait(until: deadline) && lines.isEmpty { return nil }
            } else {
                condition.wait()
            }
        }
        if dropped > 0 {
            defer { dropped = 0 }
            return .error("apphost: \(dropped) events dropped (this follower read too slowly)")
        }
        return lines.removeFirst()
    }
}

extension HostEvent {
    /// Whether the event is about the app named `app` (its CFBundleName or bundle identifier,
    /// in any case), as commands name apps.
    public func concerns(_ app: String) -> Bool {
        let wanted = app.lowercased()
        return self.app?.lowercased() == wanted || name?.lowercased() == wanted
    }
}
