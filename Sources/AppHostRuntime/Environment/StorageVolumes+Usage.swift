#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

extension StorageVolumes {
    // MARK: Measuring

    /// What the container uses and the limit that holds it: statfs of its mounted file system,
    /// its image's superblock when unmounted, its project's quota, or (accounting only) a walk.
    func usage(_ owner: Owner) -> StoragePart {
        var part = StoragePart(kind: owner.kind, identifier: owner.identifier, bytes: 0, limitBytes: nil)
        let path = containerPath(owner)
        switch volumes[owner]?.holding {
        case .mounted(let device)? where currentDevice(owner) == device:
            var space = statvfs()
            if statvfs(path, &space) == 0 { part.bytes = (UInt64(space.f_blocks) - UInt64(space.f_bfree)) * UInt64(space.f_frsize) }
            part.limitBytes = volumes[owner]?.limit
        case .quota(let project)?:
            var used: UInt64 = 0, limit: UInt64 = 0, inodes: UInt64 = 0
            if let fd = try? valueOrErrno("open \(path)", { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }) {
                if apphost_project_quota_get(fd, device, project, &used, &limit, &inodes) == 0 {
                    part.bytes = used
                    part.limitBytes = limit > 0 ? limit : nil
                }
                closeIgnoringErrors(fd)
            }
        default:
            // Not set up by this host yet (or unlimited): an unmounted image says what it holds
            // in its superblock; a plain directory is walked.
            if mechanism == .diskImage, volumes[owner] == nil, let superblock = DiskImage.superblock(of: imagePath(owner)) {
                part.bytes = superblock.usedBytes
                part.limitBytes = DiskImage.fileSystemSize(of: imagePath(owner))
            }
            // Walked only where it is a plain directory (not a file system of its own).
            var info = stat(), parentInfo = stat()
            let parentPath = stateDirectory.appendingPathComponent(owner.directory).path
            if lstat(path, &info) == 0, stat(parentPath, &parentInfo) == 0, info.st_dev == parentInfo.st_dev {
                do {
                    let directory = try DirectoryHandle(path: path)
                    part.bytes += ContainerTree.measure(directory)
                } catch {}
            }
        }
        return part
    }

    // MARK: Shutting down

    /// Unmounts every mounted image (their loop devices detach themselves). One line for each
    /// that had to be detached lazily because something still used it.
    /// What a host killed before it could end left mounted below the state directory (its
    /// containers' file systems, an image mounted aside), unmounted at this host's start, deepest
    /// first: this host holds the instance, so nothing else uses them, and no mount of a dead
    /// host outlives the next one's start (docs/storage.md, "What survives the host"). Returns a line
    /// for each, and the project table's load warning, if any.
    func releaseLeftovers() -> [String] {
        let root = stateDirectory.resolvingSymlinksInPath().path + "/"
        let points = MountTable.entries().map(\.mountPoint).filter { $0.hasPrefix(root) }
        var lines: [String] = projects?.loadWarning.map { [$0] } ?? []
        guard !points.isEmpty else { return lines }
        var detached: [String] = []
        for point in points.sorted(by: { $0.count > $1.count }) {
            _ = apphost_flush_file_system(point)
            if apphost_unmount(point, 0) != 0 {
                _ = apphost_unmount(point, 1)
                detached.append(point)
            }
        }
        lines.append("unmounted \(points.count) file system\(points.count == 1 ? "" : "s") a killed host left mounted"
            + (detached.isEmpty ? "" : " (\(detached.joined(separator: ", ")) still in use: detached)"))
        return lines
    }

    /// Unmounts every container's file system, once the work queued on the storage queue is
    /// done (none is made after); says what could not be.
    func unmountAll() -> [String] {
        volumes = [:]
        return images.unmountAll()
    }
}

/// The project ids given to containers under project quotas, kept in `STATE/storage/projects.json`
/// so that a container keeps its project across hosts. Ids already carrying files on the file
/// system (another host's) are skipped.
struct ProjectTable {
    static let range: ClosedRange<UInt32> = 2_000_000_000...2_099_999_999

    struct Ids: Codable, Equatable, Sendable {
        var containers: [String: UInt32] = [:]
        var groups: [String: UInt32] = [:]
    }

    private var ids = Ids()
    var containers: [String: UInt32] { ids.containers }
    var groups: [String: UInt32] { ids.groups }
    /// The table's store (nil: kept in memory only).
    private let store: StateStore<Ids>?
    /// Why the table on the disk could not be read (it is kept aside).
    private(set) var loadWarning: String?

    init(file: URL?) {
        store = file.map { StateStore(json: $0.path, what: "the project table", readable: true) }
        if let store {
            let (loaded, warning) = store.load()
            ids = loaded ?? Ids()
            loadWarning = warning
        }
    }

    /// The owner's project, allocated (the first free id not `inUse`) and saved the first time.
    mutating func project(for owner: StorageVolumes.Owner, inUse: (UInt32) -> Bool) throws -> UInt32 {
        let key = owner.identifier
        switch owner {
        case .app: if let known = containers[key] { return known }
        case .group: if let known = groups[key] { return known }
        }
        let taken = Set(containers.values).union(groups.values)
        guard let id = Self.range.lazy.first(where: { !taken.contains($0) && !inUse($0) }) else {
            throw StorageError("no free project id left in \(Self.range)")
        }
        switch owner {
        case .app: ids.containers[key] = id
        case .group: ids.groups[key] = id
        }
        // Kept before the id is used: a host killed right after must not give it to another.
        try store?.saveNow(ids)
        return id
    }
}
