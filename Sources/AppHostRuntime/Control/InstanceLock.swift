#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// Where a running host can be reached, and the proof that it runs: `STATE/control/`, a
/// directory only the host's user may enter (0700), holding `host.lock` (locked with flock for
/// as long as the host runs, and naming its pid) and `host.sock`, the control socket (0600).
public struct ControlPaths: Sendable {
    public let directory: URL

    public init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("control", isDirectory: true)
    }

    public var lock: URL { directory.appendingPathComponent("host.lock") }
    public var socket: URL { directory.appendingPathComponent("host.sock") }
    /// The running host's control key (0600): every request starts with it (ControlKey).
    public var key: URL { directory.appendingPathComponent("host.key") }

    /// The pid of the host running on this state directory, or nil if none runs (nobody holds
    /// the lock). A lock this user cannot open reads as held, by an unknown pid (0).
    public func runningHost() -> pid_t? {
        let fd = open(lock.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? nil : 0 }
        defer { closeIgnoringErrors(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 { return nil }
        return InstanceLock.pid(in: fd) ?? 0
    }
}

/// One host per state directory: the host holds an exclusive flock on `host.lock` for its whole
/// life (the kernel lets it go however the host ends, SIGKILL included). A second host on the
/// same instance is refused with the first one's pid and how to reach it.
public final class InstanceLock: @unchecked Sendable {
    public let paths: ControlPaths
    private var fd: Int32

    /// Takes the lock, creating the control directory. Throws `.instanceBusy` naming the
    /// running host if another holds it.
    public init(stateDirectory: URL, reachedWith hint: String) throws {
        paths = ControlPaths(stateDirectory: stateDirectory)
        let directory = paths.directory.path
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw SupervisorError("cannot create \(directory): \(errnoText(errno))", code: .unavailable, errno: errno)
        }
        // Made before this host's time by anyone (another user's host, an older version): only
        // this user enters it from now on.
        var info = stat()
        guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else {
            throw SupervisorError(
                "\(directory) is not a directory of this user's; remove it or choose another --state-dir", code: .unavailable)
        }
        _ = chmod(directory, 0o700)
        fd = open(paths.lock.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw SupervisorError("cannot open \(paths.lock.path): \(errnoText(errno))", code: .unavailable, errno: errno)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.pid(in: fd)
            closeIgnoringErrors(fd)
            throw SupervisorError(
                "a host already runs on \(stateDirectory.path)\(holder.map { " (pid \($0))" } ?? ""); "
                    + "reach it with \(hint), or stop it first", code: .instanceBusy)
        }
        let text = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.utf8.count, 0)
    }

    deinit { release() }

    /// Lets the lock go (at the host's end; closing it is enough).
    public func release() {
        guard fd >= 0 else { return }
        closeIgnoringErrors(fd)
        fd = -1
    }

    /// The pid written in a lock file.
    static func pid(in fd: Int32) -> pid_t? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return pid_t(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
