#if canImport(Glibc)
import Glibc
#endif
import AppHostSystem
import CAppHostShims

/// An open directory, closed when the handle goes. Not Sendable: it is used where it was opened.
///
/// Pass closures its `fd`, not the handle: with Swift 6.3.1, a closure capturing a noncopyable
/// local (or a `do { … } catch where` beside one) can crash or hang the compiler's
/// MandatoryAllocBoxToStack pass.
struct DirectoryHandle: ~Copyable {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    /// Opens `path` as a directory; the last component is never followed if it is a link.
    init(path: String) throws(SystemError) {
        fd = try valueOrErrno("open \(path)") { Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }

    deinit { closeIgnoringErrors(fd) }

    /// Opens the directory `name` in this one, never following a link (ELOOP or ENOTDIR if it is
    /// not a real directory).
    func open(_ name: EntryName) throws(SystemError) -> DirectoryHandle {
        DirectoryHandle(fd: try valueOrErrno("open \(name)") { openat(fd, name.bytes, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) })
    }

    /// lstat of `name` in this directory.
    func status(of name: EntryName) throws(SystemError) -> stat {
        var info = stat()
        try valueOrErrno("lstat \(name)") { fstatat(fd, name.bytes, &info, AT_SYMLINK_NOFOLLOW) }
        return info
    }

    /// fstat of the directory itself.
    func status() throws(SystemError) -> stat {
        var info = stat()
        try valueOrErrno("fstat") { fstat(fd, &info) }
        return info
    }

    /// The names in the directory, without "." and "..", read before anything is changed.
    func entries() throws(SystemError) -> [EntryName] {
        let copy = try valueOrErrno("dup") { dup(fd) }
        guard let directory = fdopendir(copy) else {
            let error = SystemError("fdopendir", errno: errno)
            closeIgnoringErrors(copy)
            throw error
        }
        defer { closedir(directory) }
        // The copy shares the descriptor's offset, which an earlier listing left at the end.
        rewinddir(directory)
        var names: [EntryName] = []
        while let entry = readdir(directory) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [UInt8(ascii: ".")] || bytes == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            names.append(EntryName(bytes))
        }
        return names
    }
}

/// A directory entry's name as the kernel gave it (any bytes but "/" and NUL), ready for the
/// *at calls, and readable in messages.
struct EntryName: CustomStringConvertible, Equatable {
    /// NUL-terminated.
    let bytes: [CChar]

    init(_ raw: [UInt8]) { bytes = raw.map { CChar(bitPattern: $0) } + [0] }
    init(_ text: String) { self.init(Array(text.utf8)) }

    var description: String { String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self) }
}

/// Walks of a container that the root host makes in a directory an app owns: purging caches,
/// measuring usage, moving a container into its size-limited file system, tagging it with a
/// project. None ever follows a link (every step is an *at call on an open directory, with
/// O_NOFOLLOW or AT_SYMLINK_NOFOLLOW), opens a device, or descends deeper than `maximumDepth`
/// (an app could make a tree deep enough to exhaust the host's stack or descriptors).
enum ContainerTree {
    static let maximumDepth = 64

    struct Totals: Equatable {
        /// Disk space of what was removed (allocated blocks; a file with other links frees none).
        var bytes: UInt64 = 0
        /// Entries other than directories.
        var files = 0
    }

    // MARK: Removing

    /// Removes everything inside `directory`, returning the first error met (it goes on past
    /// errors: as much as can be removed is). A link is removed, never followed.
    static func removeContents(of directory: borrowing DirectoryHandle, totals: inout Totals, depth: Int = 0) -> SystemError? {
        let names: [EntryName]
        do { names = try directory.entries() } catch { return error }
        var firstError: SystemError?
        for name in names {
            do {
                let info = try directory.status(of: name)
                if info.st_mode & S_IFMT == S_IFDIR {
                    try removeTree(name, in: directory, totals: &totals, depth: depth + 1)
                } else {
                    try valueOrErrno("unlink \(name)") { unlinkat(directory.fd, name.bytes, 0) }
                    totals.files += 1
                    if info.st_nlink <= 1 { totals.bytes += UInt64(info.st_blocks) * 512 }
                }
            } catch {
                if error.errno != ENOENT { firstError = firstError ?? error }
            }
        }
        return firstError
    }

    /// Removes the directory `name` and everything in it.
    static func removeTree(_ name: EntryName, in parent: borrowing DirectoryHandle, totals: inout Totals, depth: Int) throws(SystemError) {
        guard depth <= maximumDepth else { throw SystemError("remove \(name): deeper than \(maximumDepth) directories", errno: ELOOP) }
        let child = try parent.open(name)
        let info = try child.status()
        if let error = removeContents(of: child, totals: &totals, depth: depth) { throw error }
        try valueOrErrno("rmdir \(name)") { unlinkat(parent.fd, name.bytes, AT_REMOVEDIR) }
        totals.bytes += UInt64(info.st_blocks) * 512
    }

    // MARK: Measuring

    private struct FileID: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// The disk space (allocated blocks) of everything under `directory`, each file once however
    /// many links it has, staying on the directory's file system.
    static func measure(_ directory: borrowing DirectoryHandle) -> UInt64 {
        var seen = Set<FileID>()
        guard let info = try? directory.status() else { return 0 }
        return UInt64(info.st_blocks) * 512 + measure(directory, device: UInt64(info.st_dev), seen: &seen, depth: 0)
    }

    private static func measure(_ directory: borrowing DirectoryHandle, device: UInt64, seen: inout Set<FileID>, depth: Int) -> UInt64 {
        guard depth < maximumDepth, let names = try? directory.entries() else { return 0 }
        var total: UInt64 = 0
        for name in names {
            guard let info = try? directory.status(of: name), UInt64(info.st_dev) == device else { continue }
            if info.st_nlink > 1, info.st_mode & S_IFMT != S_IFDIR {
                guard seen.insert(FileID(device: device, inode: UInt64(info.st_ino))).inserted else { continue }
            }
            total += UInt64(info.st_blocks) * 512
            if info.st_mode & S_IFMT == S_IFDIR {
                do {
                    let child = try directory.open(name)
                    total += measure(child, device: device, seen: &seen, depth: depth + 1)
                } catch {}
            }
        }
        return total
    }

    // MARK: Merging (a container moved into its own file system)

    /// lseek's SEEK_DATA and SEEK_HOLE (GNU; Swift's Glibc module hides them).
    private static let seekData: Int32 = 3
    private static let seekHole: Int32 = 4

    /// Copies everything in `source` into `destination`, the source winning where both have an
    /// entry: directories are merged, anything else is replaced (atomically, by a rename).
    /// Owners, modes (without set-user-id) and times are kept; links are copied as links; a hard
    /// link becomes a copy; sockets and device nodes are not copied and are named in `skipped`.
    /// Throws at the first failure (ENOSPC when it does not fit), leaving the source untouched.
    static func merge(
        from source: borrowing DirectoryHandle, into destination: borrowing DirectoryHandle, path: String,
        skipped: inout [String], depth: Int = 0
    ) throws(SystemError) {
        guard depth < maximumDepth else { throw SystemError("copy \(path): deeper than \(maximumDepth) directories", errno: ELOOP) }
        let temporary = EntryName(".apphost-moving-\(getpid())")
        for name in try source.entries() {
            let info = try source.status(of: name)
            let here = path + "/" + name.description
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                if let existing = try? destination.status(of: name), existing.st_mode & S_IFMT != S_IFDIR {
                    try valueOrErrno("unlink \(here)") { unlinkat(destination.fd, name.bytes, 0) }
                }
                do {
                    try valueOrErrno("mkdir \(here)") { mkdirat(destination.fd, name.bytes, 0o700) }
                } catch where error.errno == EEXIST {}
                let from = try source.open(name)
                let to = try destination.open(name)
                try merge(from: from, into: to, path: here, skipped: &skipped, depth: depth + 1)
                try keepAttributes(info, of: to.fd, mode: info.st_mode & 0o3777)
                continue
            case S_IFREG:
                _ = unlinkat(destination.fd, temporary.bytes, 0)
                try copyFile(name, info: info, from: source, to: destination, as: temporary, path: here)
            case S_IFLNK:
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = try valueOrErrno("readlink \(here)") { readlinkat(source.fd, name.bytes, &target, target.count - 1) }
                target[count] = 0
                _ = unlinkat(destination.fd, temporary.bytes, 0)
                try valueOrErrno("symlink \(here)") { symlinkat(target, destination.fd, temporary.bytes) }
                try valueOrErrno("chown \(here)") { fchownat(destination.fd, temporary.bytes, info.st_uid, info.st_gid, AT_SYMLINK_NOFOLLOW) }
                let times = [info.st_atim, info.st_mtim]
                try valueOrErrno("utimens \(here)") { utimensat(destination.fd, temporary.bytes, times, AT_SYMLINK_NOFOLLOW) }
            case S_IFIFO:
                _ = unlinkat(destination.fd, temporary.bytes, 0)
                try valueOrErrno("mkfifo \(here)") { mknodat(destination.fd, temporary.bytes, S_IFIFO | (info.st_mode & 0o777), 0) }
                try valueOrErrno("chown \(here)") { fchownat(destination.fd, temporary.bytes, info.st_uid, info.st_gid, AT_SYMLINK_NOFOLLOW) }
            default:
                skipped.append(here)
                continue
            }
            // Replaces what the destination had under this name; a directory there goes first.
            if let existing = try? destination.status(of: name), existing.st_mode & S_IFMT == S_IFDIR {
                var ignored = Totals()
                try removeTree(name, in: destination, totals: &ignored, depth: depth + 1)
            }
            try valueOrErrno("rename \(here)") { renameat(destination.fd, temporary.bytes, destination.fd, name.bytes) }
        }
    }

    /// Copies a regular file's data, keeping its holes, and its owner, mode and times.
    private static func copyFile(
        _ name: EntryName, info: stat, from source: borrowing DirectoryHandle, to destination: borrowing DirectoryHandle,
        as temporary: EntryName, path: String
    ) throws(SystemError) {
        let input = try valueOrErrno("open \(path)") { openat(source.fd, name.bytes, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }
        defer { closeIgnoringErrors(input) }
        var opened = stat()
        try valueOrErrno("fstat \(path)") { fstat(input, &opened) }
        guard opened.st_ino == info.st_ino, opened.st_mode & S_IFMT == S_IFREG else { throw SystemError("copy \(path): it changed", errno: EAGAIN) }
        let output = try valueOrErrno("create \(path)") {
            openat(destination.fd, temporary.bytes, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        defer { closeIgnoringErrors(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        let size = opened.st_size
        while offset < size {
            // The next stretch of data; holes are left holes (ENXIO: only a hole is left).
            let start = lseek(input, offset, seekData)
            if start < 0 && errno == ENXIO { break }
            let dataStart = start < 0 ? offset : start
            let holeStart = lseek(input, dataStart, seekHole)
            let dataEnd = holeStart < 0 ? size : min(holeStart, size)
            var position = dataStart
            while position < dataEnd {
                let wanted = Int(min(off_t(buffer.count), dataEnd - position))
                let count = try valueOrErrno("read \(path)") { buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, wanted, position) } }
                if count == 0 { break }
                var written = 0
                while written < count {
                    written += try valueOrErrno("write \(path)") {
                        buffer.withUnsafeBytes { pwrite(output, $0.baseAddress! + written, count - written, position + off_t(written)) }
                    }
                }
                position += off_t(count)
            }
            offset = max(dataEnd, offset + 1)
        }
        try valueOrErrno("truncate \(path)") { ftruncate(output, size) }
        try keepAttributes(opened, of: output, mode: opened.st_mode & 0o1777)
    }

    /// Owner, mode and times, as the original had them.
    private static func keepAttributes(_ info: stat, of fd: Int32, mode: mode_t) throws(SystemError) {
        try valueOrErrno("fchown") { fchown(fd, info.st_uid, info.st_gid) }
        try valueOrErrno("fchmod") { fchmod(fd, mode) }
        let times = [info.st_atim, info.st_mtim]
        try valueOrErrno("futimens") { futimens(fd, times) }
    }

    // MARK: Project quotas

    /// Gives everything under `directory` the project `id`, and directories the inherit flag,
    /// so that all the container holds, and whatever is made in it, counts against its quota.
    /// Only directories and regular files can carry one (links, sockets and devices are skipped).
    static func setProject(_ directory: borrowing DirectoryHandle, id: UInt32, depth: Int = 0) throws(SystemError) {
        try valueOrErrno("set project") { apphost_set_file_project(directory.fd, id, 1) }
        guard depth < maximumDepth else { return }
        for name in try directory.entries() {
            guard let info = try? directory.status(of: name) else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                try setProject(try directory.open(name), id: id, depth: depth + 1)
            case S_IFREG:
                guard let fd = try? valueOrErrno("open \(name)", { openat(directory.fd, name.bytes, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) })
                else { continue }
                defer { closeIgnoringErrors(fd) }
                var opened = stat()
                guard fstat(fd, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else { continue }
                try valueOrErrno("set project of \(name)") { apphost_set_file_project(fd, id, 0) }
            default:
                continue
            }
        }
    }
}
