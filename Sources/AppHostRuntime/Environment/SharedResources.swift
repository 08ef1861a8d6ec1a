#if canImport(Glibc)
import AppHostSystem
import Glibc
#endif
import CAppHostShims

/// Something an app held at the moment it would have been suspended: a lock on a file in an
/// app-group container, or a shared resource the host's policy declares. Either ends the app
/// with 0xdead10cc (docs/policy.md, "Resource rules").
public struct HeldResource: Sendable, Equatable, CustomStringConvertible {
    public enum What: Sendable, Equatable {
        /// A lock on a file inside an app-group container.
        case lock(FileLock)
        /// An open descriptor on a declared shared resource (the policy's `sharedResources`).
        case sharedResource(declared: String)
    }

    public var what: What
    /// The file as the app's descriptor names it (for a socket, the declared path).
    public var path: String
    public var pid: Int32
    public var fd: Int32

    public var description: String {
        switch what {
        case .lock(let lock): "a \(lock) on \(path)"
        case .sharedResource(let declared): "the shared resource \(declared) open (fd \(fd))"
        }
    }
}

/// One line of a descriptor's `lock:` entries in /proc/PID/fdinfo/FD.
public struct FileLock: Sendable, Equatable, CustomStringConvertible {
    /// How it was taken: "flock", "POSIX" (fcntl F_SETLK) or "OFD" (fcntl F_OFD_SETLK).
    public var kind: String
    /// "read" or "write".
    public var type: String
    /// The locked bytes, "0-EOF" for the whole file.
    public var range: String

    /// Parses `lock:\t1: POSIX  ADVISORY  WRITE 4242 fe:00:1234 0 EOF`.
    init?(fdinfoLine line: Substring) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 9, fields[0] == "lock:" else { return nil }
        switch fields[2] {
        case "FLOCK": kind = "flock"
        case "OFDLCK": kind = "OFD"
        case "POSIX": kind = "POSIX"
        default: kind = String(fields[2])
        }
        type = fields[4].lowercased()
        range = "\(fields[7])-\(fields[8])"
    }

    public var description: String {
        "\(kind) \(type) lock" + (range == "0-EOF" ? "" : " (bytes \(range))")
    }
}

/// Finds what an app holds before it is frozen (docs/policy.md, "Resource rules"). It starts from the
/// app's own descriptors, never from the pid column of /proc/locks (an OFD lock has none, and a
/// flock lock names whichever process took it, not every process that shares it):
///
/// 1. /proc/locks gives the device and inode of every lock on the machine, in one read. With no
///    lock on the group containers' file system and no declared resource, the check ends here.
/// 2. Each of the app's descriptors is stat'ed (about 1 µs each). A descriptor on a locked inode
///    is read in /proc/PID/fdinfo/FD, whose `lock:` lines are the locks taken through it; its
///    path (readlink) says whether it is in an app-group container.
/// 3. Descriptors on a declared file or device match by device and inode; a socket matches when
///    its peer is bound to a declared socket path, or its connection waits, not yet accepted, on
///    a listener bound there (sock_diag).
public struct SharedResourceCheck: Sendable {
    /// STATE/groups, with symbolic links resolved (as /proc/PID/fd links name files).
    let groupsDirectory: String
    /// Paths the policy declares as shared system resources.
    let declared: [String]

    public init(groupsDirectory: String, declared: [String]) {
        self.groupsDirectory = groupsDirectory
        self.declared = declared
    }

    private struct FileID: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// What the processes `pids` (an app and its children) hold now.
    public func held(by pids: [Int32]) -> [HeldResource] {
        let locked = lockedInodes(onDevices: groupDevices())

        var declaredFiles: [FileID: String] = [:]
        var declaredSockets: [FileID: String] = [:]
        for path in declared {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            let id = FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            if info.st_mode & S_IFMT == S_IFSOCK { declaredSockets[id] = path } else { declaredFiles[id] = path }
        }
        guard !locked.isEmpty || !declaredFiles.isEmpty || !declaredSockets.isEmpty else { return [] }

        var held: [HeldResource] = []
        var sockets: [(pid: pid_t, fd: Int32, inode: UInt32)] = []
        for pid in pids {
            for file in openFiles(of: pid) {
                let id = FileID(device: file.device, inode: file.inode)
                if locked.contains(id) {
                    let path = link(pid: pid, fd: file.fd)
                    if path.hasPrefix(groupsDirectory + "/") {
                        for lock in locks(pid: pid, fd: file.fd) {
                            held.append(HeldResource(what: .lock(lock), path: path, pid: pid, fd: file.fd))
                        }
                    }
                }
                if let declared = declaredFiles[id] {
                    held.append(HeldResource(what: .sharedResource(declared: declared), path: link(pid: pid, fd: file.fd), pid: pid, fd: file.fd))
                } else if file.mode & S_IFMT == S_IFSOCK, !declaredSockets.isEmpty {
                    sockets.append((pid, file.fd, UInt32(truncatingIfNeeded: file.inode)))
                }
            }
        }
        if !sockets.isEmpty {
            for socket in sockets {
                // Each end looked up by its inode: a dump of every socket may skip one while
                // others come and go.
                // Connected to the declared socket (its peer is bound there, or its listener is
                // for a connection not yet accepted), or bound there itself.
                let ends = Self.ends(ofUnixSocket: socket.inode)
                if let declared = ends.lazy.compactMap({ declaredSockets[FileID(device: $0.device, inode: $0.inode_of_path)] }).first {
                    held.append(HeldResource(what: .sharedResource(declared: declared), path: declared, pid: socket.pid, fd: socket.fd))
                }
            }
        }
        return held
    }

    /// The file systems app-group containers live on: the state directory's, and each group's
    /// own where its storage is a mounted disk image.
    private func groupDevices() -> Set<UInt64> {
        var info = stat()
        guard stat(groupsDirectory, &info) == 0 else { return [] }
        var devices: Set<UInt64> = [UInt64(info.st_dev)]
        for name in directoryEntries(groupsDirectory) where stat(groupsDirectory + "/" + name, &info) == 0 {
            devices.insert(UInt64(info.st_dev))
        }
        return devices
    }

    /// Devices and inodes with a lock held (not merely requested) on `devices`, from /proc/locks.
    private func lockedInodes(onDevices devices: Set<UInt64>) -> Set<FileID> {
        guard !devices.isEmpty else { return [] }
        var result = Set<FileID>()
        for line in readSmallFile("/proc/locks").split(separator: "\n") where !line.contains("->") {
            // "1: POSIX  ADVISORY  WRITE 4242 fe:00:1234 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6 else { continue }
            let parts = fields[5].split(separator: ":")
            guard parts.count == 3, let major = UInt32(parts[0], radix: 16), let minor = UInt32(parts[1], radix: 16),
                  let inode = UInt64(parts[2])
            else { continue }
            let lockDevice = apphost_makedev(major, minor)
            if devices.contains(lockDevice) { result.insert(FileID(device: lockDevice, inode: inode)) }
        }
        return result
    }

    private func openFiles(of pid: pid_t) -> [apphost_open_file] {
        var capacity = 1024
        while true {
            var files = [apphost_open_file](repeating: apphost_open_file(), count: capacity)
            let count = Int(apphost_list_open_files(pid, &files, Int32(capacity)))
            if count < 0 { return [] }  // the process is gone
            if count <= capacity { return Array(files.prefix(count)) }
            capacity = count + 64
        }
    }

    private func locks(pid: pid_t, fd: Int32) -> [FileLock] {
        readSmallFile("/proc/\(pid)/fdinfo/\(fd)").split(separator: "\n").compactMap(FileLock.init(fdinfoLine:))
    }

    private func link(pid: pid_t, fd: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return "fd \(fd)" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The Unix-domain socket with this inode, if it is there.
    private static func unixSocket(_ inode: UInt32) -> apphost_unix_socket? {
        var entry = apphost_unix_socket()
        return apphost_find_unix_socket(inode, &entry) == 0 ? entry : nil
    }

    /// The socket with this inode and what it is connected to: its peer, or, for a connection
    /// its listener has not accepted yet, the listener (bound to the path it connected to). A
    /// pending connection's far end has no inode until it is accepted, so sock_diag reports the
    /// peer as 0 and only the listener's list of pending connections names the socket. The app
    /// is frozen, so its connection can only be accepted (or closed by the other side) while it
    /// is looked at: a socket no listener has pending any more is looked up again, and its peer
    /// followed as usual.
    private static func ends(ofUnixSocket inode: UInt32) -> [apphost_unix_socket] {
        guard let entry = unixSocket(inode) else { return [] }
        guard entry.peer == 0 else { return [entry] + (unixSocket(entry.peer).map { [$0] } ?? []) }
        guard entry.connected else { return [entry] }
        var listener = apphost_unix_socket()
        if apphost_find_unix_listener_with_pending(inode, &listener) == 0 { return [entry, listener] }
        guard let accepted = unixSocket(inode), accepted.peer != 0 else { return [entry] }
        return [accepted] + (unixSocket(accepted.peer).map { [$0] } ?? [])
    }
}
