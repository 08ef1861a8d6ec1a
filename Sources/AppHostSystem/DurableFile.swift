#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file that is only ever replaced whole, so that a process killed at any moment, or a machine
/// that loses power, leaves either the old contents or the new ones, never a mix: every store of
/// the host's state directory is one (docs/storage.md, "What survives the host").
///
/// A replacement writes a temporary file beside the file, syncs it (`fsync`), renames it over
/// the file, and syncs the directory, which makes the rename itself durable.
package struct DurableFile: Sendable {
    /// The file's path.
    package let path: String

    /// Called between the steps of a replacement, each named as it is reached ("written half",
    /// "synced", "renamed"): how a test stops or kills a writer at the points that matter. Nil
    /// outside tests.
    package var stepObserver: (@Sendable (_ step: String) -> Void)?

    package init(path: String, stepObserver: (@Sendable (_ step: String) -> Void)? = nil) {
        self.path = path
        self.stepObserver = stepObserver
    }

    /// Where a replacement is written before it is renamed: a hidden name beside the file, never
    /// read as the file (a host killed mid-write leaves it; the next replacement truncates it).
    package var temporaryPath: String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        return String(path[..<slash]) + "." + String(path[slash...]) + ".new"
    }

    /// The directory the file is in.
    package var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Replaces the file's contents with `bytes` (temporary file, fsync, rename, fsync of the
    /// directory). The directory must exist. Throws the failed call; the file is then unchanged.
    /// `synced: false` leaves out both fsyncs: the replacement is still whole or absent for a
    /// process killed at any moment (the page cache outlives it), not for a machine that loses
    /// power; for a record whose write must be quick (the SDK's delivered transfers).
    package func replace(with bytes: [UInt8], permissions: UInt32 = 0o600, synced: Bool = true) throws(SystemError) {
        let temporary = temporaryPath
        let fd = try valueOrErrno("open \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode_t(permissions)) }
        do {
            if let observer = stepObserver {
                try writeAll(fd, Array(bytes.prefix(bytes.count / 2)), call: "write \(temporary)")
                observer("written half")
                try writeAll(fd, Array(bytes.dropFirst(bytes.count / 2)), call: "write \(temporary)")
            } else {
                try writeAll(fd, bytes, call: "write \(temporary)")
            }
            if synced { try valueOrErrno("fsync \(temporary)") { fsync(fd) } }
        } catch {
            closeIgnoringErrors(fd)
            _ = unlink(temporary)
            throw error
        }
        closeIgnoringErrors(fd)
        stepObserver?("synced")
        try valueOrErrno("rename \(temporary) to \(path)") { rename(temporary, path) }
        stepObserver?("renamed")
        // The rename is in the directory: durable once the directory is synced.
        if synced, let directoryFD = try? valueOrErrno("open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = fsync(directoryFD)
            closeIgnoringErrors(directoryFD)
        }
    }

    /// Removes the file durably (a store that became empty); a missing file is not an error.
    package func remove() throws(SystemError) {
        if unlink(path) != 0 {
            let error = Glibc.errno
            if error != ENOENT { throw SystemError("unlink \(path)", errno: error) }
        }
        _ = unlink(temporaryPath)
        if let directoryFD = try? valueOrErrno("open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = fsync(directoryFD)
            closeIgnoringErrors(directoryFD)
        }
    }

    /// The file's bytes; nil if there is no file. Throws if it exists and cannot be read.
    package func read() throws(SystemError) -> [UInt8]? {
        let fd: Int32
        do {
            fd = try valueOrErrno("open \(path)") { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        } catch where error.errno == ENOENT {
            return nil
        }
        defer { closeIgnoringErrors(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try valueOrErrno("read \(path)") { buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            if count == 0 { return result }
            result += buffer[0..<count]
        }
    }

    /// Moves an unreadable file aside, never over an earlier one: to `NAME.unreadable-N` with
    /// the first N free. Returns the new path, or nil if it could not be moved.
    package func keepAside() -> String? {
        for attempt in 1...1000 {
            let aside = "\(path).unreadable-\(attempt)"
            var info = stat()
            guard lstat(aside, &info) != 0 else { continue }
            return rename(path, aside) == 0 ? aside : nil
        }
        return nil
    }
}
