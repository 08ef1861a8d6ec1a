#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostSystem
import CAppHostShims
import Synchronization

/// A running host's control socket (`STATE/control/host.sock`, 0600 in a 0700 directory): each
/// connection sends one `ControlRequest` and reads the answer (ControlProtocol.swift). Only the
/// host's own user and root may connect; the peer's credentials are checked too, and anyone
/// else gets one line saying so. An app may run as the host's user (a host that is not root
/// gives its apps no users of their own), so a request must also begin with the host's control
/// key (`host.key`, ControlKey), which an app cannot read: Landlock keeps it out of the state
/// directory, and its own mount namespace hides it, where the machine has either.
///
/// Every connection is served from readiness on one private serial queue: Dispatch read and
/// write sources (epoll underneath) on non-blocking sockets, so a hundred idle or stuck clients
/// cost descriptors and buffers, not threads. A client that stops reading holds up nothing but
/// itself: what it is sent waits in its connection's outbox (ControlConnection.swift), bounded
/// for followers of events. Dispatch rather than `ControlReader`, whose one thread runs handlers
/// with `queue.sync` to save wake-ups on the apps' chatty sockets: the connections here are few
/// and quiet, and they need what Dispatch already has: writability, timers (a client that says
/// nothing is let go after 10 s) and a queue that `publish` and the commands' replies can reach
/// from any thread with `async`.
public final class ControlServer: @unchecked Sendable {
    /// Carries out one command line, printing through the reply; returns its status (0 or 1).
    public typealias Handler = @Sendable (_ command: String, _ reply: ControlReply) async -> Int32
    /// Formats an event for a follower: JSON or text.
    public typealias Formatter = @Sendable (_ event: HostEvent, _ json: Bool) -> String

    private let paths: ControlPaths
    private let handler: Handler
    private let formatter: Formatter
    /// Why an `events --app` filter names no app, or nil.
    private let unknownApp: @Sendable (String) -> String?
    /// Where the listener and every connection are served; what follows is touched only here.
    private let queue = DispatchQueue(label: "apphost-control")
    private let accepting: any DispatchSourceRead
    private let listener: Int32
    private let key: ControlKey
    /// The connections being served, which they stay in until they end.
    private var connections: [ObjectIdentifier: ControlConnection] = [:]
    /// How many connections follow events: read by `publish` on the host's side, so that with
    /// none an event costs an atomic load, not a trip to the queue.
    private let following = Atomic(0)
    /// Entered by each command until its answer is sent, or cannot be.
    private let answering = DispatchGroup()

    /// How long a client may take to send its request line.
    static let requestPatience: DispatchTimeInterval = .seconds(10)
    /// The events a follower may have waiting before the oldest are dropped.
    static let followerCapacity = 10_000

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
        // The key is on the disk before anyone can connect.
        key = try ControlKey.make(at: paths.key)
        unlink(paths.socket.path)
        let listener = try valueOrErrno("socket") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
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
        self.listener = listener
        accepting = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        accepting.setEventHandler { [self] in acceptConnections() }
        accepting.setCancelHandler { closeIgnoringErrors(listener) }
        accepting.resume()
    }

    /// Stops listening and removes the socket (the host is ending), then waits up to `grace` for
    /// the commands under way to be answered (a `quit` sent over the socket is one).
    public func close(answering grace: Duration) {
        unlink(paths.socket.path)
        unlink(paths.key.path)
        accepting.cancel()
        _ = answering.wait(timeout: .now() + grace.seconds)
    }

    /// Hands an event to every follower whose filter it passes; never blocks.
    public func publish(_ event: HostEvent) {
        guard following.load(ordering: .relaxed) > 0 else { return }
        queue.async { [self] in
            var lines: [Bool: String] = [:]
            for connection in connections.values {
                guard case .follower(let json, let app) = connection.purpose else { continue }
                if let app, !event.concerns(app) { continue }
                let line = lines[json] ?? formatter(event, json)
                lines[json] = line
                connection.send(.output(line))
            }
        }
    }

    /// Takes every connection waiting (the listener is readable); on the queue.
    private func acceptConnections() {
        while true {
            let fd = apphost_accept(listener)
            if fd >= 0 {
                serve(fd)
                continue
            }
            switch errno {
            case EINTR, ECONNABORTED:
                continue
            case EMFILE, ENFILE:
                // Out of descriptors: the client waits in the backlog while the listener rests
                // a moment (it stays readable, so taking no one would be a busy loop).
                accepting.suspend()
                queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in accepting.resume() }
                return
            default:
                return  // EAGAIN: everyone waiting has been taken
            }
        }
    }

    private func serve(_ fd: Int32) {
        let connection = ControlConnection(fd: fd, queue: queue)
        connections[ObjectIdentifier(connection)] = connection
        connection.ended = { [self] in ended($0) }
        if let refusal = Self.refusal(of: fd) {
            connection.send(.error(refusal))
            connection.send(.status(1))
            return
        }
        connection.readRequest(within: Self.requestPatience) { [self] line in
            if let line, key.unlocking(line) == nil {
                connection.send(.error("apphost: the request did not begin with this host's control key (\(paths.key.path), which only its user and root can read, never its apps)"))
                connection.send(.status(2))
                return
            }
            guard let line, let request = key.unlocking(line).flatMap(ControlRequest.init(line:)) else {
                connection.send(.error("apphost: unreadable control request"))
                connection.send(.status(2))
                return
            }
            carryOut(request, on: connection)
        }
    }

    private func carryOut(_ request: ControlRequest, on connection: ControlConnection) {
        switch request {
        case .run(let command):
            answering.enter()
            connection.purpose = .command
            let reply = ControlReply(connection: connection)
            let handler = self.handler
            Task {
                let status = await handler(command, reply)
                reply.connection.put(.status(status))
            }
        case .events(let json, let app):
            if let app, let refusal = unknownApp(app) {
                connection.send(.error("apphost: ctl: \(refusal)"))
                connection.send(.status(1))
                return
            }
            following.add(1, ordering: .relaxed)
            connection.follow(json: json, app: app, capacity: Self.followerCapacity)
        }
    }

    private func ended(_ connection: ControlConnection) {
        connections[ObjectIdentifier(connection)] = nil
        switch connection.purpose {
        case .command: answering.leave()
        case .follower: following.subtract(1, ordering: .relaxed)
        case nil: break
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
}

extension HostEvent {
    /// Whether the event is about the app named `app` (its CFBundleName or bundle identifier,
    /// in any case), as commands name apps.
    public func concerns(_ app: String) -> Bool {
        let wanted = app.lowercased()
        return self.app?.lowercased() == wanted || name?.lowercased() == wanted
    }
}
