#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// How the host holds each app's container (and each app group's) to its storage limit.
public enum StorageMechanism: String, Sendable, CaseIterable {
    /// A project quota per container on the state directory's own file system: the kernel
    /// refuses writes past the limit (EDQUOT). Needs a root host and a file system mounted with
    /// project quotas (ext4 `prjquota`).
    case projectQuota = "project-quota"
    /// A size-limited file system per container: a sparse ext4 image, loop-mounted by the host
    /// over the container directory. Writes past the limit fail as on a full disk (ENOSPC).
    /// Needs a root host, loop devices and mkfs.ext4 (e2fsprogs).
    case diskImage = "disk-image"
    /// Usage is measured (a walk of the container), nothing is limited: the degraded mode.
    case accounting
}

/// What the state directory's machine offers for storage limits, probed once at start (and by
/// `apphost doctor`): the mechanism a host would use, and one line on each candidate.
struct StorageProbe {
    var mechanism: StorageMechanism
    /// One line, after the mechanism's name: what it is, and where it is not the best, why.
    var note: String
    /// Whether project quotas are on for the state directory's file system, and why not.
    var projectQuotas: (available: Bool, detail: String)
    /// Whether size-limited mounts can be made here, and why not.
    var diskImages: (available: Bool, detail: String)
    /// The state directory's block device (quotactl's fallback where quotactl_fd is missing).
    var device: String?

    /// Probes for the state directory (the nearest existing directory on its way is looked at
    /// when it does not exist yet). `requested` forces a mechanism: an unavailable one is an
    /// error, as `--suspension cgroup` is.
    static func probe(stateDirectory: URL, requested: StorageMechanism?) throws(SupervisorError) -> StorageProbe {
        let root = geteuid() == 0
        let existing = nearestExistingDirectory(stateDirectory.path)
        let mount = MountTable.entry(containing: existing)
        let quotas = projectQuotaState(at: existing, mount: mount, root: root)
        let images = diskImageState(root: root)
        var probe = StorageProbe(mechanism: .accounting, note: "", projectQuotas: quotas, diskImages: images, device: mount?.source)
        switch requested {
        case .accounting:
            probe.note = "requested: usage is measured, nothing is limited"
        case .projectQuota:
            guard quotas.available else {
                throw SupervisorError("project quotas were requested but are unavailable: \(quotas.detail)", code: .unavailable)
            }
            probe.mechanism = .projectQuota
        case .diskImage:
            guard images.available else {
                throw SupervisorError("disk images were requested but are unavailable: \(images.detail)", code: .unavailable)
            }
            probe.mechanism = .diskImage
        case nil:
            probe.mechanism = quotas.available ? .projectQuota : images.available ? .diskImage : .accounting
        }
        switch probe.mechanism {
        case .projectQuota:
            probe.note = "a project quota per container on \(mount?.source ?? existing) (writes past the limit fail with EDQUOT)"
        case .diskImage:
            probe.note = "a size-limited file system per container: an ext4 image on a loop device (writes past the limit fail with ENOSPC)"
                + "; project quotas unavailable: \(quotas.detail)"
        case .accounting where requested == nil:
            probe.note = "degraded: usage is measured but nothing is limited (project quotas: \(quotas.detail); "
                + "disk images: \(images.detail))"
        case .accounting:
            break
        }
        return probe
    }

    /// The path itself if it is a directory, else its nearest existing ancestor.
    static func nearestExistingDirectory(_ path: String) -> String {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        while url.path != "/" {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue { return url.path }
            url.deleteLastPathComponent()
        }
        return "/"
    }

    private static func projectQuotaState(at path: String, mount: MountTable.Entry?, root: Bool) -> (available: Bool, detail: String) {
        let where_ = mount.map { "\($0.mountPoint) (\($0.type) on \($0.source))" } ?? path
        guard let fd = try? valueOrErrno("open \(path)", { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) else {
            return (false, "\(path) cannot be opened")
        }
        defer { closeIgnoringErrors(fd) }
        do throws(SystemError) {
            try valueOrErrno("quotactl Q_GETINFO") { apphost_project_quota_info(fd, mount?.source) }
        } catch {
            switch error.errno {
            case ESRCH: return (false, "\(where_) is mounted without project quotas (prjquota)")
            case ENOSYS, ENOTSUP, EINVAL: return (false, "\(where_) has no quota support here")
            default: return (false, "\(where_): \(error)")
            }
        }
        // Accounting alone is not enough: the kernel must enforce the limits too.
        guard mount?.superOptions.contains("prjquota") ?? true else {
            return (false, "\(where_) accounts project usage but does not enforce limits (mount it with prjquota)")
        }
        guard root else { return (false, "\(where_) has project quotas, but only a root host may set them") }
        return (true, "on \(where_)")
    }

    private static func diskImageState(root: Bool) -> (available: Bool, detail: String) {
        guard root else { return (false, "the host is not root: it cannot mount a file system per container") }
        guard access("/dev/loop-control", R_OK | W_OK) == 0 else { return (false, "no /dev/loop-control (no loop devices)") }
        guard readSmallFile("/proc/filesystems").split(separator: "\n").contains(where: { $0.hasSuffix("\text4") }) else {
            return (false, "the kernel has no ext4")
        }
        for tool in ["mkfs.ext4", "e2fsck", "resize2fs"] where ExternalTool.find(tool) == nil {
            return (false, "\(tool) is missing (Debian: apt-get install e2fsprogs)")
        }
        return (true, "loop devices (/dev/loop-control) and mkfs.ext4 (\(ExternalTool.find("mkfs.ext4") ?? ""))")
    }
}

extension MountTable {
    /// The mount `path` is in: of its file system's mounts, the one deepest on its way (a
    /// file system can be mounted, or bind-mounted, in several places).
    static func entry(containing path: String) -> Entry? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let mounts = entries().filter { $0.device == UInt64(info.st_dev) }
        let onTheWay = mounts.filter { $0.mountPoint == "/" || real == $0.mountPoint || real.hasPrefix($0.mountPoint + "/") }
        return onTheWay.max { $0.mountPoint.count < $1.mountPoint.count } ?? mounts.last
    }
}

/// A storage figure for one container or app-group container, for `ps` and reports.
public struct StoragePart: Sendable, Equatable, Codable {
    /// "container" or "group".
    public var kind: String
    /// The bundle or group identifier.
    public var identifier: String
    /// What its files take, in bytes (allocated blocks).
    public var bytes: UInt64
    /// The limit that holds it, in bytes; nil where nothing limits it (accounting only).
    public var limitBytes: UInt64?
}

/// An app's storage: its container and the containers of its app groups (shared with the
/// group's other apps, so counted in each member's figure).
public struct StorageUsage: Sendable, Equatable {
    public var mechanism: StorageMechanism
    public var parts: [StoragePart]

    /// An app's usage: its container first, then its app groups'.
    public init(mechanism: StorageMechanism, parts: [StoragePart]) {
        self.mechanism = mechanism
        self.parts = parts
    }

    /// Everything it uses, in bytes.
    public var bytes: UInt64 { parts.reduce(0) { $0 + $1.bytes } }
    /// The sum of the limits, where every part is limited.
    public var limitBytes: UInt64? {
        parts.allSatisfy { $0.limitBytes != nil } ? parts.reduce(0) { $0 + ($1.limitBytes ?? 0) } : nil
    }
}
