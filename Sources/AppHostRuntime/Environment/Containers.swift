#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

/// Each app's container: `STATE/containers/BUNDLE-ID/` with Documents, Library and tmp, as on iOS.
/// It outlives the app's processes (an app finds its data again at its next launch).
enum Containers {
    static let directories = ["Documents", "Library", "Library/Caches", "Library/Preferences", "Library/Application Support", "tmp"]

    /// Creates the container, mode 0700 (no other user, and so no other app, can enter it), and
    /// on a root host gives it to the app's user. It never follows a link: the app owns what is
    /// inside and may have replaced a directory with a link or a file; such an entry is repaired
    /// (a link removed, never its target; a file moved aside as `NAME.not-a-directory`) and said
    /// in `repairs`.
    static func prepare(
        for bundle: AppBundle, in stateDirectory: URL, owner: (uid: UInt32, gid: UInt32)?, repairs: inout [String]
    ) throws -> URL {
        let container = url(for: bundle, in: stateDirectory)
        let containers = container.deletingLastPathComponent()
        // The state directory and containers/ are the host's: app users may pass, not list.
        try FileManager.default.createDirectory(at: containers, withIntermediateDirectories: true)
        try valueOrErrno("chmod \(containers.path)") { chmod(containers.path, 0o711) }
        let parent = try valueOrErrno("open \(containers.path)") { open(containers.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { closeIgnoringErrors(parent) }
        let top = try directory(bundle.identifier, in: parent, path: container.path, repairs: &repairs)
        defer { closeIgnoringErrors(top) }
        var info = stat()
        try valueOrErrno("fstat \(container.path)") { fstat(top, &info) }
        // A container last used under another user (per-app users switched on or off) is
        // given back to the app's user, without following a link.
        if let owner, info.st_uid != owner.uid || info.st_gid != owner.gid { try own(container.path, owner: owner) }
        if info.st_mode & 0o7777 != 0o700 { try valueOrErrno("chmod \(container.path)") { fchmod(top, 0o700) } }
        for relative in directories {
            var fd = try valueOrErrno("dup") { dup(top) }
            var path = container.path
            for name in relative.split(separator: "/").map(String.init) {
                path += "/" + name
                let next: Int32
                do {
                    next = try directory(name, in: fd, path: path, repairs: &repairs)
                } catch {
                    closeIgnoringErrors(fd)
                    throw error
                }
                closeIgnoringErrors(fd)
                fd = next
                if let owner { try own(fd, path: path, owner: owner) }
            }
            closeIgnoringErrors(fd)
        }
        return container
    }

    /// Where `prepare` makes the app's container.
    static func url(for bundle: AppBundle, in stateDirectory: URL) -> URL {
        stateDirectory.appendingPathComponent("containers", isDirectory: true).appendingPathComponent(bundle.identifier, isDirectory: true)
    }

    /// Where `prepareGroup` makes an app group's container.
    static func groupURL(_ identifier: String, in stateDirectory: URL) -> URL {
        stateDirectory.appendingPathComponent("groups", isDirectory: true).appendingPathComponent(identifier, isDirectory: true)
    }

    /// Opens `name` in the directory `parent` as a directory, creating it if missing, never
    /// following a link: a link or a file planted where it belongs is repaired first.
    private static func directory(_ name: String, in parent: Int32, path: String, repairs: inout [String]) throws(SystemError) -> Int32 {
        for attempt in 0..<2 {
            // Opened first: at every launch but the first it is there (a launch's path).
            let existing = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if existing >= 0 { return existing }
            if errno == ENOENT {
                do {
                    try valueOrErrno("mkdir \(path)") { mkdirat(parent, name, 0o755) }
                } catch where error.errno == EEXIST {
                    // Made meanwhile: checked below.
                }
            }
            do {
                return try valueOrErrno("open \(path)") { openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            } catch where (error.errno == ELOOP || error.errno == ENOTDIR) && attempt == 0 {
                var info = stat()
                try valueOrErrno("lstat \(path)") { fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) }
                if info.st_mode & S_IFMT == S_IFLNK {
                    try valueOrErrno("unlink \(path)") { unlinkat(parent, name, 0) }
                    repairs.append("\(path) was a symbolic link; removed (not its target) and made a directory again")
                } else {
                    try valueOrErrno("rename \(path)") { renameat(parent, name, parent, name + ".not-a-directory") }
                    repairs.append("\(path) was not a directory; moved aside to \(name).not-a-directory")
                }
            }
        }
        throw SystemError("open \(path)", errno: ENOTDIR)
    }

    /// An app group's shared container, `STATE/groups/GROUP-ID/`. On a root host it belongs to
    /// the group's gid with the set-group-id bit (mode 2770), so every member app can write it.
    static func prepareGroup(_ identifier: String, in stateDirectory: URL, gid: UInt32?, repairs: inout [String]) throws -> URL {
        let container = groupURL(identifier, in: stateDirectory)
        let groups = container.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: groups, withIntermediateDirectories: true)
        try valueOrErrno("chmod \(groups.path)") { chmod(groups.path, 0o711) }
        let parent = try valueOrErrno("open \(groups.path)") { open(groups.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { closeIgnoringErrors(parent) }
        let fd = try directory(identifier, in: parent, path: container.path, repairs: &repairs)
        defer { closeIgnoringErrors(fd) }
        if let gid {
            try valueOrErrno("chown \(container.path)") { fchown(fd, 0, gid) }
            try valueOrErrno("chmod \(container.path)") { fchmod(fd, 0o2770) }
        } else {
            try valueOrErrno("chmod \(container.path)") { fchmod(fd, 0o700) }
        }
        return container
    }

    /// Gives the open directory `fd` to `owner` unless it is theirs already (a chown to the
    /// same owner would still write the inode, at every launch).
    private static func own(_ fd: Int32, path: String, owner: (uid: UInt32, gid: UInt32)) throws(SystemError) {
        var info = stat()
        if fstat(fd, &info) == 0, info.st_uid == owner.uid, info.st_gid == owner.gid { return }
        try valueOrErrno("chown \(path)") { fchown(fd, owner.uid, owner.gid) }
    }

    /// Gives everything under `path` to `owner`, never following a link (lchown, and a walk that
    /// descends only into real directories).
    private static func own(_ path: String, owner: (uid: UInt32, gid: UInt32)) throws {
        try valueOrErrno("chown \(path)") { lchown(path, owner.uid, owner.gid) }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return }
        for entry in directoryEntries(path) { try own(path + "/" + entry, owner: owner) }
    }

    /// The app process's whole environment: nothing of the host's leaks into it. HOME and the
    /// XDG variables point Foundation's directory look-ups into the container.
    /// `parent`: the host's pid, for a runner whose parent is the host (not in a PID namespace
    /// of its own).
    static func environment(container: URL, parent: pid_t?) -> [String] {
        containerEnvironment(container.path) + runtimeEnvironment + (parent.map { ["APPHOST_PARENT_PID=\($0)"] } ?? [])
    }

    /// What every app process's environment has, the same for all: the launch template starts
    /// with it, since the Swift runtime and libdispatch read theirs once, at start-up.
    static let runtimeEnvironment = [
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "LANG=C.UTF-8",
        // Without CAP_SYS_NICE libdispatch complains about every worker's priority, through
        // syslog's /dev/log or, set to stderr, into the app's output.
        "LIBDISPATCH_LOG=NO",
        // The backtracer spawns a helper on every crash; a crash should stay a plain crash.
        "SWIFT_BACKTRACE=enable=no",
    ]
}
