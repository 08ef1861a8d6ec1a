#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

extension StorageVolumes {
    /// Where a host's containers and images are, and the work of making, checking, resizing and
    /// mounting a container's disk image: it decides from the file system alone and returns what
    /// it made, never touching what StorageVolumes records, so that it runs off the host's loop
    /// (on StorageVolumes.ImageQueue's queue).
    struct Layout: Sendable {
        let mechanism: StorageMechanism
        let stateDirectory: URL
        /// The state directory's block device (quotactl's fallback).
        let device: String?
    }
}

extension StorageVolumes.Layout {
    typealias Owner = StorageVolumes.Owner
    typealias Notice = StorageVolumes.Notice
    typealias Volume = StorageVolumes.Volume

    /// Where images (and the project table) live: the host's alone.
    var imagesDirectory: URL { stateDirectory.appendingPathComponent("storage", isDirectory: true) }

    func containerPath(_ owner: Owner) -> String {
        stateDirectory.appendingPathComponent(owner.directory).appendingPathComponent(owner.identifier).path
    }

    func imagePath(_ owner: Owner) -> String {
        imagesDirectory.appendingPathComponent(owner.directory).appendingPathComponent(owner.identifier + ".ext4").path
    }

    /// The device of the file system at the container's path now (a stat).
    func currentDevice(_ owner: Owner) -> UInt64? {
        var info = stat()
        return lstat(containerPath(owner), &info) == 0 ? UInt64(info.st_dev) : nil
    }

    /// Opens (creating it if needed) `STATE/containers/` or `STATE/groups/`, mode 0711.
    func parentDirectory(_ owner: Owner) throws -> DirectoryHandle {
        let parent = stateDirectory.appendingPathComponent(owner.directory, isDirectory: true)
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        try valueOrErrno("chmod \(parent.path)") { chmod(parent.path, 0o711) }
        return try DirectoryHandle(path: parent.path)
    }

    /// The container directory in `parent`, made (0700; the container's own preparation sets
    /// its owner and mode) if missing. Never follows a link.
    func containerDirectory(_ owner: Owner, in parent: borrowing DirectoryHandle) throws(SystemError) -> DirectoryHandle {
        let name = EntryName(owner.identifier)
        do {
            let parentFD = parent.fd
            try valueOrErrno("mkdir \(containerPath(owner))") { mkdirat(parentFD, name.bytes, 0o700) }
        } catch where error.errno == EEXIST {}
        return try parent.open(name)
    }

    /// Why a container is left unlimited.
    private struct Unlimited: Error, CustomStringConvertible {
        var description: String
    }

    /// Holds the owner's container to `limit` with its disk image: the image an earlier host
    /// left mounted kept, else made (or resized) and mounted. Returns the volume to record and
    /// what to say; never throws: where it fails, the container runs unlimited and a warning
    /// says why. Touches nothing but the file system, so it runs off the loop.
    func prepareImage(_ owner: Owner, limit: UInt64) -> (Volume, [Notice]) {
        var notices: [Notice] = []
        do {
            try FileManager.default.createDirectory(
                at: imagesDirectory.appendingPathComponent(owner.directory), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try valueOrErrno("chmod \(imagesDirectory.path)") { chmod(imagesDirectory.path, 0o700) }
            if let adopted = try adoptMounted(owner, limit: limit, notices: &notices) { return (adopted, notices) }
            return (try mountImage(owner, limit: limit, notices: &notices), notices)
        } catch {
            notices.append(Notice(warning: true, text: "\(owner) is not limited: \(error)"))
            return (Volume(holding: .unlimited("\(error)"), limit: nil), notices)
        }
    }

    /// A container found mounted: by a host killed before it could unmount (its apps are gone
    /// with it), or by something else. Its volume when its image is kept mounted as it is; nil
    /// when it is not mounted (any more: to be resized to a changed limit, it is unmounted).
    private func adoptMounted(_ owner: Owner, limit: UInt64, notices: inout [Notice]) throws -> Volume? {
        let clock = ContinuousClock()
        let started = clock.now
        let path = containerPath(owner), image = imagePath(owner)
        let parent = try parentDirectory(owner)
        let directory = try containerDirectory(owner, in: parent)
        let device = UInt64(try directory.status().st_dev)
        guard device != UInt64(try parent.status().st_dev) else { return nil }
        // The kernel names the backing file by its real path.
        guard DiskImage.backingFile(ofDevice: device) == URL(fileURLWithPath: image).resolvingSymlinksInPath().path else {
            throw Unlimited(description: "something other than its image is mounted on \(path); it is left as it is")
        }
        let size = DiskImage.fileSystemSize(of: image) ?? limit
        guard size == limit else {
            // To be resized, the file system must be unmounted first.
            try valueOrErrno("unmount \(path)") { apphost_unmount(path, 0) }
            return nil
        }
        notices.append(Notice(warning: false, text: "\(owner): reused its file system, left mounted by an earlier host", elapsed: started.duration(to: clock.now)))
        return Volume(holding: .mounted(device: device), limit: size)
    }

    /// Makes the image if there is none (or shrinks it to a lower limit), mounts it over the
    /// container, and moves into it what the plain directory holds (made before this host
    /// limited storage, or by a host that could not). Returns its volume.
    private func mountImage(_ owner: Owner, limit: UInt64, notices: inout [Notice]) throws -> Volume {
        let clock = ContinuousClock()
        let path = containerPath(owner), image = imagePath(owner)
        let parent = try parentDirectory(owner)
        let plain = try containerDirectory(owner, in: parent)
        guard UInt64(try plain.status().st_dev) == UInt64(try parent.status().st_dev) else {
            throw Unlimited(description: "\(path) is still mounted after unmounting it")
        }
        let existing = try plain.entries()
        // mke2fs makes lost+found, and e2fsck (run before a resize) makes it again: an app's
        // container has none.
        var madeLostAndFound = false
        var effective = limit
        if let size = DiskImage.fileSystemSize(of: image), size != limit {
            madeLostAndFound = true
            let resizing = clock.now
            if size < limit {
                do {
                    try DiskImage.grow(image, from: size, to: limit)
                    notices.append(Notice(
                        warning: false, text: "\(owner): its file system grew from \(size.mebibytes) to \(limit.mebibytes)", elapsed: resizing.duration(to: clock.now)))
                } catch {
                    effective = size
                    notices.append(Notice(warning: true, text: "\(owner) keeps its limit of \(size.mebibytes): growing it to \(limit.mebibytes) failed (\(error))"))
                }
            } else if size > limit {
                do {
                    // In place where resize2fs can; else into a new image, file by file.
                    do {
                        try DiskImage.shrink(image, to: limit)
                    } catch {
                        guard let used = DiskImage.superblock(of: image)?.usedBytes, used < limit else { throw error }
                        try shrinkByCopying(owner, to: limit)
                    }
                    notices.append(Notice(
                        warning: false, text: "\(owner): its file system shrank from \(size.mebibytes) to \(limit.mebibytes)", elapsed: resizing.duration(to: clock.now)))
                } catch {
                    effective = size
                    let used = DiskImage.superblock(of: image)?.usedBytes
                    notices.append(Notice(warning: true, text: "\(owner) keeps its limit of \(size.mebibytes): it holds \(used.map { $0.mebibytes } ?? "more"), "
                        + "which does not fit in the new limit of \(limit.mebibytes) (\(error)); free space in it, or raise the limit"))
                }
            }
        } else if let size = DiskImage.fileSystemSize(of: image), let file = DiskImage.size(of: image), file > size {
            // A shrink cut short after resize2fs: the file follows its file system.
            _ = truncate(image, off_t(size))
        } else if DiskImage.size(of: image) == nil {
            let making = clock.now
            try DiskImage.create(at: image, bytes: limit)
            madeLostAndFound = true
            notices.append(Notice(warning: false, text: "\(owner): made its \(limit.mebibytes) file system", elapsed: making.duration(to: clock.now)))
        }
        let mounting = clock.now
        let loop = UInt32(try DiskImage.mount(image, on: plain.fd))
        let root = try parent.open(EntryName(owner.identifier))
        let volume = Volume(holding: .mounted(device: UInt64(try root.status().st_dev)), limit: effective)
        notices.append(Notice(warning: false, text: "\(owner): mounted its \(effective.mebibytes) file system (/dev/loop\(loop))", elapsed: mounting.duration(to: clock.now)))
        if madeLostAndFound { _ = unlinkat(root.fd, "lost+found", AT_REMOVEDIR) }
        guard !existing.isEmpty else { return volume }
        if let reason = move(existing: plain, into: root, owner: owner) {
            // Unmounted again: the app runs with its files where they are.
            _ = apphost_unmount(path, 1)
            throw Unlimited(description: reason)
        }
        notices.append(Notice(warning: true, text: "\(owner): what it held before its storage was limited was moved into its file system"))
        return volume
    }

    /// Moves what the plain directory holds into the mounted file system: checked to fit, then
    /// copied (the plain copy winning over what the image has), flushed, and only then removed
    /// from the plain directory. Nil when done, else why not (the plain copy is then untouched).
    private func move(existing plain: borrowing DirectoryHandle, into root: borrowing DirectoryHandle, owner: Owner) -> String? {
        let needed = ContainerTree.measure(plain)
        var space = statvfs()
        if fstatvfs(root.fd, &space) == 0, needed > UInt64(space.f_bavail) * UInt64(space.f_frsize) {
            return "its \(needed.mebibytes) do not fit in its file system (\((UInt64(space.f_bavail) * UInt64(space.f_frsize)).mebibytes) free); "
                + "it keeps them where they are; raise the limit to move them in"
        }
        var skipped: [String] = []
        do {
            try ContainerTree.merge(from: plain, into: root, path: containerPath(owner), skipped: &skipped)
            let rootFD = root.fd
            try valueOrErrno("syncfs") { apphost_syncfs(rootFD) }
        } catch {
            return "moving its files into its file system failed (\(error)); it keeps them where they are"
        }
        var removed = ContainerTree.Totals()
        _ = ContainerTree.removeContents(of: plain, totals: &removed)
        return nil
    }

    /// Mounts an image on a directory of its own, `name`, under STATE/storage/moving/; its path.
    func mountAside(_ image: String, as name: String) throws -> String {
        let staging = imagesDirectory.appendingPathComponent("moving", isDirectory: true)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let mountPath = staging.appendingPathComponent(name).path
        try StorageVolumes.makeDirectory(mountPath)
        let mountPoint = try DirectoryHandle(path: mountPath)
        _ = try DiskImage.mount(image, on: mountPoint.fd)
        return mountPath
    }

    /// Shrinks an image that resize2fs will not shrink far enough (its minimum counts the inode
    /// tables of the larger file system): a new image of `limit` is made, the files copied into
    /// it, and it replaces the old one by a rename only once complete and flushed. Throws,
    /// leaving the old image as it was, when they do not fit.
    private func shrinkByCopying(_ owner: Owner, to limit: UInt64) throws {
        let image = imagePath(owner), smaller = image + ".smaller"
        _ = unlink(smaller)
        try DiskImage.create(at: smaller, bytes: limit)
        let from = try mountAside(image, as: "from-" + owner.directory + "-" + owner.identifier)
        let into: String
        do {
            into = try mountAside(smaller, as: "into-" + owner.directory + "-" + owner.identifier)
        } catch {
            _ = apphost_unmount(from, 1)
            _ = unlink(smaller)
            throw error
        }
        let copied = Result { () throws(SystemError) in try copyTree(from: from, into: into, path: containerPath(owner)) }
        let unmounted = apphost_unmount(from, 0) == 0 && apphost_unmount(into, 0) == 0
        if !unmounted {
            _ = apphost_unmount(from, 1)
            _ = apphost_unmount(into, 1)
        }
        do {
            try copied.get()
            guard unmounted else { throw StorageError("an image was still in use after the copy") }
            try valueOrErrno("rename \(smaller)") { rename(smaller, image) }
        } catch {
            _ = unlink(smaller)
            throw error
        }
    }
}
