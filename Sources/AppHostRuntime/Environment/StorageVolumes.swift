#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// The storage of one host's containers and app-group containers: each held to its limit by
/// the host's mechanism (a disk image mounted over it, or a project quota), measured cheaply
/// (statfs of its file system, a quota query; a walk only where nothing limits it), and set up
/// at the first launch that needs it, so later launches pay one stat. Used on the host's loop
/// only; disk images are made and mounted on a queue of their own (ImageQueue), and what that
/// made is recorded here by `commit`.
final class StorageVolumes {
    /// Whose storage: an app's container or an app group's.
    enum Owner: Hashable, Sendable, CustomStringConvertible {
        case app(String)
        case group(String)

        var identifier: String {
            switch self {
            case .app(let id), .group(let id): id
            }
        }

        var kind: String {
            switch self {
            case .app: "container"
            case .group: "group"
            }
        }

        /// The directory under the state directory that holds such containers.
        var directory: String {
            switch self {
            case .app: "containers"
            case .group: "groups"
            }
        }

        var description: String {
            switch self {
            case .app(let id): "the container of \(id)"
            case .group(let id): "the app-group container \(id)"
            }
        }
    }

    /// Something to tell the person running the host: a `storage` event (a file system made or
    /// mounted, with what it cost) or a `warning`.
    struct Notice: Equatable, Sendable {
        var warning: Bool
        var text: String
        var elapsed: Duration?
    }

    enum Holding: Equatable, Sendable {
        /// The image is mounted over the container; `device` is its file system's.
        case mounted(device: UInt64)
        /// The container's files carry this project, whose quota holds them.
        case quota(project: UInt32)
        /// Nothing holds it (accounting only), and why.
        case unlimited(String)
    }

    struct Volume: Equatable, Sendable {
        var holding: Holding
        /// The limit that holds it, in bytes (nil when unlimited).
        var limit: UInt64?
    }

    /// Where the containers and images are, and the disk-image work (StorageVolumes+Images).
    let layout: Layout
    /// The serial queue disk images are made and mounted on, off the loop, and what it mounted.
    let images: ImageQueue
    /// Each container set up so far, and what holds it (read by the measuring extension).
    var volumes: [Owner: Volume] = [:]
    /// How many times preparing a container has mounted or unmounted a file system on it: a
    /// mount namespace copied before (a standby's) does not have the change.
    private(set) var mountChanges = 0
    private(set) var projects: ProjectTable?

    init(mechanism: StorageMechanism, stateDirectory: URL, device: String?) {
        layout = Layout(mechanism: mechanism, stateDirectory: stateDirectory, device: device)
        images = ImageQueue(layout: layout)
        if mechanism == .projectQuota { projects = ProjectTable(file: imagesDirectory.appendingPathComponent("projects.json")) }
    }

    var mechanism: StorageMechanism { layout.mechanism }
    var stateDirectory: URL { layout.stateDirectory }
    /// The state directory's block device (quotactl's fallback).
    var device: String? { layout.device }
    var imagesDirectory: URL { layout.imagesDirectory }
    func containerPath(_ owner: Owner) -> String { layout.containerPath(owner) }
    func imagePath(_ owner: Owner) -> String { layout.imagePath(owner) }
    /// The device of the file system at the container's path now (a stat).
    func currentDevice(_ owner: Owner) -> UInt64? { layout.currentDevice(owner) }
    private func parentDirectory(_ owner: Owner) throws -> DirectoryHandle { try layout.parentDirectory(owner) }
    func containerDirectory(_ owner: Owner, in parent: borrowing DirectoryHandle) throws(SystemError) -> DirectoryHandle {
        try layout.containerDirectory(owner, in: parent)
    }
    private func mountAside(_ image: String, as name: String) throws -> String { try layout.mountAside(image, as: name) }

    // MARK: Setting up

    /// Makes sure the container exists and is held to `limit` by the host's mechanism. Never
    /// throws: where the mechanism fails for this container, it runs unlimited and a warning
    /// says why (a container's data is never dropped to enforce a limit).
    func prepare(_ owner: Owner, limit: UInt64) -> [Notice] {
        switch mechanism {
        case .accounting:
            guard volumes[owner] == nil else { return [] }
            volumes[owner] = Volume(holding: .unlimited("accounting only"), limit: nil)
            return countingMounts(owner) { recoverFromImage(owner) }
        case .diskImage:
            // On the storage queue all the same (waiting for it), so that every mount is made
            // there, one at a time, and known to it.
            guard needsPreparing(owner) else { return [] }
            return commit(images.prepareNow(owner, limit: limit))
        case .projectQuota:
            if let volume = volumes[owner], case .quota = volume.holding { return [] }
            return countingMounts(owner) { prepareQuota(owner, limit: limit) }
        }
    }

    /// Whether the owner's container needs work that would hold the loop: under disk images,
    /// one not yet mounted by this host as it was recorded (a stat).
    func needsPreparing(_ owner: Owner) -> Bool {
        guard mechanism == .diskImage else { return false }
        if let volume = volumes[owner], case .mounted(let device) = volume.holding, currentDevice(owner) == device { return false }
        return true
    }

    /// Records what the storage queue made for an owner, counting a mount change wherever it
    /// set up the image (a mount made and then lazily detached leaves the container's device as
    /// it was, but stays in a namespace copied meanwhile); returns its notices.
    func commit(_ prepared: ImageQueue.Prepared) -> [Notice] {
        volumes[prepared.owner] = prepared.volume
        if prepared.mountChanged { mountChanges += 1 }
        return prepared.notices
    }

    /// Runs `body`, which may mount or unmount a file system on the owner's container, and counts
    /// a change if it may have: when the container's device changed (an image an earlier host
    /// left mounted, moved out). Disk images count theirs through `commit`.
    private func countingMounts(_ owner: Owner, _ body: () -> [Notice]) -> [Notice] {
        let before = currentDevice(owner)
        let notices = body()
        if currentDevice(owner) != before { mountChanges += 1 }
        return notices
    }

    private func prepareQuota(_ owner: Owner, limit: UInt64) -> [Notice] {
        do {
            let parent = try parentDirectory(owner)
            let directory = try containerDirectory(owner, in: parent)
            guard var table = projects else { throw StorageError("no project table") }
            let parentFD = parent.fd, directoryFD = directory.fd
            let project = try table.project(for: owner) { id in self.projectInUse(id, fd: parentFD) }
            projects = table
            let recovered = recoverFromImage(owner)
            var current: UInt32 = 0, inherit: Int32 = 0
            try valueOrErrno("read the project of \(containerPath(owner))") { apphost_file_project(directoryFD, &current, &inherit) }
            if current != project || inherit == 0 { try ContainerTree.setProject(directory, id: project) }
            let device = self.device
            try valueOrErrno("set the quota of project \(project)") { apphost_project_quota_set_limit(directoryFD, device, project, limit) }
            volumes[owner] = Volume(holding: .quota(project: project), limit: limit)
            return recovered
        } catch {
            volumes[owner] = Volume(holding: .unlimited("\(error)"), limit: nil)
            return [Notice(warning: true, text: "\(owner) is not limited: \(error)")]
        }
    }

    /// A container that lives in a disk image (made by a host that limited storage with images)
    /// but is now used without one: its files are moved out of the image into the plain
    /// directory (the image mounted aside, under STATE/storage/moving/), and the image removed
    /// once they are safely there. Where images cannot be mounted here, a warning says where the
    /// files are.
    private func recoverFromImage(_ owner: Owner) -> [Notice] {
        let image = imagePath(owner)
        guard DiskImage.size(of: image) != nil else { return [] }
        let stranded = Notice(warning: true, text: "\(owner) has its files in \(image), which this host cannot mount; they stay there, "
            + "and the app starts without them (run a host that can mount it, as root with loop devices)")
        guard geteuid() == 0, access("/dev/loop-control", R_OK | W_OK) == 0 else { return [stranded] }
        do {
            let mountPath = try mountAside(image, as: owner.directory + "-" + owner.identifier)
            // Unmounted whatever happens (lazily if still busy); its loop device then detaches.
            let moved = Result { () throws(SystemError) in try moveOut(of: mountPath, owner: owner) }
            _ = apphost_unmount(mountPath, 1)
            try moved.get()
            _ = unlink(image)
            return [Notice(warning: true, text: "\(owner): its files were moved out of its disk image into \(containerPath(owner)), which "
                + (mechanism == .projectQuota ? "its project quota now limits" : "nothing limits now"))]
        } catch {
            return [Notice(warning: true, text: "\(owner) has its files in \(image); moving them out failed (\(error)): they stay there, and the app starts without them")]
        }
    }

    /// Whether some files on the file system already carry project `id` (another host's).
    private func projectInUse(_ id: UInt32, fd: Int32) -> Bool {
        var used: UInt64 = 0, limit: UInt64 = 0, inodes: UInt64 = 0
        guard apphost_project_quota_get(fd, device, id, &used, &limit, &inodes) == 0 else { return false }
        return inodes > 0 || limit > 0
    }
}
