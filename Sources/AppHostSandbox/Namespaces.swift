#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
import CAppHostShims

/// Each app in a PID namespace and a mount namespace of its own (DESIGN.md, Sandbox).
///
/// The host starts `apphost-init` as the init (pid 1) of a new PID namespace, and it starts the
/// app's runner (pid 2): when the init ends, however it ends (the host killed with SIGKILL
/// included, through its parent-death signal), the kernel ends every process left in the
/// namespace, so nothing an app spawned outlives it. The runner makes every mount of its new
/// mount namespace read-only but the app's containers, so that no call (chmod, chown, setxattr,
/// utimensat, which Landlock does not govern) changes a file outside them, and mounts a /proc
/// that shows only the app's processes. A host that is not root makes a user namespace too,
/// mapping its own uid to itself.
package enum Namespaces {
    /// What this kernel and user can give apps.
    package enum Support: Sendable, Equatable {
        /// `flags` for `apphost_spawn`.
        case available(flags: Int32)
        /// Why not, in a phrase.
        case unavailable(String)

        package var flags: Int32 {
            if case .available(let flags) = self { return flags }
            return 0
        }
    }

    /// The pid of the app process in its PID namespace: the init's one child.
    package static let appPID: Int32 = 2

    /// Tries once: makes the namespaces in a short-lived child, which mounts a /proc and makes
    /// a mount read-only as the runner will (about a millisecond).
    package static func probe() -> Support {
        var flags = Int32(APPHOST_NAMESPACE_PID_AND_MOUNT)
        if geteuid() != 0 { flags |= Int32(APPHOST_NAMESPACE_USER) }
        var step: UnsafePointer<CChar>?
        guard apphost_probe_namespaces(flags, &step) == 0 else {
            let failed = step.map { String(cString: $0) } ?? "clone"
            let user = geteuid() == 0 ? "" : " (a host that is not root needs an unprivileged user namespace)"
            return .unavailable("cannot make a PID and mount namespace\(user): \(failed): \(String(cString: strerror(errno)))")
        }
        return .available(flags: flags)
    }

    /// In the runner, in the app's namespaces: `hidden` (the host's state directory, with every
    /// app's container) replaced by an empty directory, in which only the paths of `writable`
    /// and `readable` below it appear again; every mount read-only except `writable`; a
    /// read-only /proc of this PID namespace.
    package static func isolateFileSystem(hiding hidden: String?, writable: [String], readable: [String]) throws(SystemError) {
        try valueOrErrno("mount propagation") { apphost_mount_stop_propagation() }
        let isHidden = { (path: String) in hidden.map { path.hasPrefix($0 + "/") } ?? false }
        // What stays visible under the hidden directory, opened before it is covered and
        // mounted again from the descriptor.
        var kept: [(path: String, fd: Int32)] = []
        defer { kept.forEach { closeIgnoringErrors($0.fd) } }
        for path in writable + readable where isHidden(path) {
            let fd = try valueOrErrno("open \(path)") { open(path, 0o10000000 /* O_PATH */ | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            kept.append((path, fd))
        }
        if let hidden {
            try valueOrErrno("hide \(hidden)") { apphost_mount_empty_directory(hidden) }
            for (path, fd) in kept {
                try makeDirectories(path, below: hidden)
                try valueOrErrno("bind \(path)") { apphost_mount_bind("/proc/self/fd/\(fd)", path) }
            }
        }
        for path in writable where !isHidden(path) {
            try valueOrErrno("bind \(path)") { apphost_mount_bind(path, path) }
        }
        detachOtherContainerImages(keeping: writable, hidden: hidden)
        try valueOrErrno("read-only /") { apphost_mount_set_read_only("/", 1) }
        for path in writable {
            try valueOrErrno("read-write \(path)") { apphost_mount_set_read_only(path, 0) }
        }
        try valueOrErrno("mount /proc") { apphost_mount_proc() }
        try valueOrErrno("read-only /proc") { apphost_mount_set_read_only("/proc", 1) }
    }

    /// Detaches, in this namespace, the disk images of other hosts' containers (mounted where
    /// they were when it was copied from the host's): a copy here would keep another host's
    /// image mounted, unflushed, after that host unmounts it, until this app ends. In C: parsing
    /// mountinfo in Swift cost 0.25–0.6 ms in a freshly started runner.
    private static func detachOtherContainerImages(keeping writable: [String], hidden: String?) {
        let keep = writable.map { strdup($0) }
        defer { keep.forEach { free($0) } }
        let pointers = keep.map { UnsafePointer($0) }
        _ = apphost_detach_container_images(pointers, Int32(pointers.count), hidden)
    }

    /// Makes `path` and the directories on the way to it, below `top` (an empty directory).
    private static func makeDirectories(_ path: String, below top: String) throws(SystemError) {
        var current = top
        for component in path.dropFirst(top.count).split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST { throw SystemError("mkdir \(current)", errno: errno) }
        }
    }
}
