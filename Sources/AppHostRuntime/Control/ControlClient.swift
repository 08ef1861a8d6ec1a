#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem

/// A client of a running host's control socket: `apphost ctl`, and AppHostTesting.
public enum ControlClient {
    /// Sends `request` to the host running on the state directory and hands each line of its
    /// answer to `output` or `error` as it arrives. Returns the answer's status; throws one line
    /// for the person at the terminal if no host can be reached.
    public static func send(
        _ request: ControlRequest, to paths: ControlPaths, output: (String) -> Void, error: (String) -> Void
    ) throws(SupervisorError) -> Int32 {
        let fd = try connect(paths)
        defer { closeIgnoringErrors(fd) }
        // A host that refuses this peer answers at once and closes: its answer is still read.
        // Without the key (another user's host) the host's answer says why it refuses.
        let key = try? ControlKey.read(at: paths.key)
        _ = sendAll(fd, (key?.locking(request.line) ?? request.line) + "\n")
        var reader = LineReader(fd: fd)
        while let line = reader.next(limit: 1 << 20) {
            switch ControlLine(line[...]) {
            case .output(let text): output(text)
            case .error(let text): error(text)
            case .status(let status): return status
            case nil: throw SupervisorError("the host answered something unreadable: \(line.prefix(80))", code: .unavailable)
            }
        }
        if case .events = request {
            // Following ends with the host: the stream is over, not failed.
            error("apphost: the host on \(paths.directory.deletingLastPathComponent().path) ended")
            return 0
        }
        throw SupervisorError("the host at \(paths.socket.path) ended before it answered", code: .unavailable)
    }

    /// How long a client waits for the socket of a host that holds its instance but is still
    /// starting (the lock comes before the socket).
    static let startingGrace: Duration = .seconds(10)

    /// Connects to the control socket, or says why not in one line. A host that is still
    /// starting is waited for.
    static func connect(_ paths: ControlPaths) throws(SupervisorError) -> Int32 {
        let deadline = ContinuousClock.now + startingGrace
        while true {
            do {
                return try connectOnce(paths)
            } catch where [ENOENT, ECONNREFUSED].contains(error.errno ?? 0) {
                guard let pid = paths.runningHost() else { throw error }
                guard ContinuousClock.now < deadline else {
                    let state = paths.directory.deletingLastPathComponent().path
                    throw SupervisorError(
                        "a host runs on \(state)\(pid > 0 ? " (pid \(pid))" : "") but its control socket is not open: it is still starting, or it runs without one (its started line says why)",
                        code: .unavailable, errno: error.errno)
                }
                usleep(20_000)
            }
        }
    }

    private static func connectOnce(_ paths: ControlPaths) throws(SupervisorError) -> Int32 {
        let address: ControlAddress
        do { address = try ControlAddress(paths) } catch {
            throw unreachable(paths, errno: error.errno)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SupervisorError("socket: \(errnoText(errno))", code: .unavailable, errno: errno) }
        var result: Int32
        repeat {
            result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let error = errno
            closeIgnoringErrors(fd)
            throw unreachable(paths, errno: error)
        }
        return fd
    }

    private static func unreachable(_ paths: ControlPaths, errno error: Int32) -> SupervisorError {
        let state = paths.directory.deletingLastPathComponent().path
        switch error {
        case ENOENT, ECONNREFUSED, ENOTDIR:
            return SupervisorError("no host runs on \(state) (apphost launch starts one)", code: .unavailable, errno: error)
        case EACCES, EPERM:
            return SupervisorError(
                "cannot reach the host on \(state): only the user it runs as, and root, may", code: .unavailable, errno: error)
        default:
            return SupervisorError(
                "cannot reach the host on \(state): \(errnoText(error))", code: .unavailable, errno: error)
        }
    }
}
