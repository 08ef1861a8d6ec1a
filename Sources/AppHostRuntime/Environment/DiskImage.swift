#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// A container's size-limited file system: a sparse ext4 image of exactly the limit's size in
/// `STATE/storage/`, attached to a loop device that detaches itself when unmounted
/// (LO_FLAGS_AUTOCLEAR) and mounted (nosuid, nodev) over the container's directory. The image
/// takes host disk only as it fills, and never more than its size: that is the limit.
enum DiskImage {
    /// The block size of every image (the same as the usual host's, whatever the limit).
    static let blockSize: UInt64 = 4096
    /// The loop driver's block major.
    static let loopMajor: UInt32 = 7

    /// What the image's superblock says (read from the file, without mounting it).
    struct Superblock: Equatable {
        var blockSize: UInt64
        var blocks: UInt64
        var freeBlocks: UInt64
        /// Blocks the file system keeps for itself (journal, inode tables…), as mke2fs recorded.
        var overheadBlocks: UInt64

        /// What its files take: as statfs reports for the mounted file system.
        var usedBytes: UInt64 { (blocks &- freeBlocks &- overheadBlocks) * blockSize }
    }

    /// Reads the superblock at byte 1024 of the image, nil if it is not ext4.
    static func superblock(of path: String) -> Superblock? {
        guard let fd = try? valueOrErrno("open \(path)", { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }) else { return nil }
        defer { closeIgnoringErrors(fd) }
        var bytes = [UInt8](repeating: 0, count: 1024)
        guard bytes.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 1024, 1024) }) == 1024 else { return nil }
        func value(_ offset: Int, _ size: Int) -> UInt64 {
            (0..<size).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        guard value(0x38, 2) == 0xEF53 else { return nil }
        let wide = value(0x60, 4) & 0x80 != 0  // INCOMPAT_64BIT: the counts have high halves
        return Superblock(
            blockSize: 1024 << value(0x18, 4),
            blocks: value(0x4, 4) | (wide ? value(0x150, 4) << 32 : 0),
            freeBlocks: value(0xC, 4) | (wide ? value(0x158, 4) << 32 : 0),
            overheadBlocks: value(0x248, 4))
    }

    /// Makes an image of `bytes` at `path`: written as `path.partial` and renamed, so that a
    /// host killed halfway never leaves a half-made file system under the real name.
    static func create(at path: String, bytes: UInt64) throws(StorageError) {
        let partial = path + ".partial"
        _ = unlink(partial)
        do {
            let fd = try valueOrErrno("create \(partial)") { open(partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            defer { closeIgnoringErrors(fd) }
            try valueOrErrno("truncate \(partial)") { ftruncate(fd, off_t(bytes)) }
        } catch {
            throw StorageError(error)
        }
        // A journal of 1/64 of the file system, 4 to 16 MiB: journal blocks the kernel writes
        // take host disk whatever the app stores, so a large one would cost every container.
        let journal = min(16, max(4, (bytes >> 20) / 64))
        do {
            try ExternalTool.check("mkfs.ext4", [
                "-q", "-F", "-b", "\(blockSize)", "-m", "0", "-J", "size=\(journal)", "-L", "apphost",
                "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0", partial,
            ])
            try valueOrErrno("rename \(partial)") { rename(partial, path) }
        } catch let error as StorageError {
            _ = unlink(partial)
            throw error
        } catch {
            _ = unlink(partial)
            throw StorageError("\(error)")
        }
    }

    /// Attaches the image to a loop device and mounts it on the directory `target` is open on.
    /// The loop device detaches itself once unmounted. Returns the loop device's number.
    static func mount(_ path: String, on target: Int32) throws(StorageError) -> Int32 {
        do {
            let image = try valueOrErrno("open \(path)") { open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
            defer { closeIgnoringErrors(image) }
            var index: Int32 = -1
            let loop = try valueOrErrno("attach \(path) to a loop device") { apphost_loop_attach(image, path, &index) }
            // Closed after the mount: with autoclear, closing first would detach the device.
            defer { closeIgnoringErrors(loop) }
            // discard: what the app deletes is given back to the host's file system (the loop
            // device punches holes in the image); noinit_itable: no background zeroing.
            try valueOrErrno("mount /dev/loop\(index)") {
                apphost_mount_ext4_on("/dev/loop\(index)", target, apphost_mount_flags_container(), "discard,noinit_itable")
            }
            return index
        } catch {
            throw StorageError(error)
        }
    }

    /// The image file behind a mounted loop device's file system, from sysfs; nil if `device`
    /// is not a loop device.
    static func backingFile(ofDevice device: UInt64) -> String? {
        let major = UInt32(truncatingIfNeeded: (device >> 8) & 0xfff), minor = UInt32(truncatingIfNeeded: (device & 0xff) | ((device >> 12) & 0xfff00))
        guard major == loopMajor else { return nil }
        let file = readSmallFile("/sys/dev/block/\(major):\(minor)/loop/backing_file").trimmingCharacters(in: .newlines)
        return file.isEmpty ? nil : file
    }

    /// Grows an unmounted image to `bytes` (e2fsck, the file, then resize2fs). Offline: growing
    /// a mounted ext4 needs CAP_SYS_RESOURCE, which a root host may lack. On failure the file
    /// goes back to its size.
    static func grow(_ path: String, from size: UInt64, to bytes: UInt64) throws(StorageError) {
        try ExternalTool.check("e2fsck", ["-f", "-p", path], success: [0, 1])
        do {
            try valueOrErrno("truncate \(path)") { truncate(path, off_t(bytes)) }
        } catch {
            throw StorageError(error)
        }
        do {
            try ExternalTool.check("resize2fs", [path, "\(bytes / 1024)K"])
        } catch {
            _ = truncate(path, off_t(size))
            throw error
        }
    }

    /// Shrinks an unmounted image to `bytes` (e2fsck, then resize2fs, then the file). Throws,
    /// leaving the image as it was, when what it holds does not fit.
    static func shrink(_ path: String, to bytes: UInt64) throws(StorageError) {
        // -p repairs what is safe to repair; 1 means it did.
        try ExternalTool.check("e2fsck", ["-f", "-p", path], success: [0, 1])
        try ExternalTool.check("resize2fs", [path, "\(bytes / 1024)K"])
        do {
            try valueOrErrno("truncate \(path)") { truncate(path, off_t(bytes)) }
        } catch {
            throw StorageError(error)
        }
    }

    /// The size of the file system in the image, the limit it holds its container to (which a
    /// resize cut short can leave different from the file's size); the file's size if it holds
    /// no ext4.
    static func fileSystemSize(of path: String) -> UInt64? {
        guard let file = size(of: path) else { return nil }
        return superblock(of: path).map { $0.blocks * $0.blockSize } ?? file
    }

    /// The size of the image file.
    static func size(of path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return UInt64(info.st_size)
    }
}
