#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem

/// The apps' storage (docs/storage.md, "Storage limits" and "How the code is laid out"): each
/// container's and app-group container's volume held to the policy's limits (StorageVolumes),
/// who owns them on a root host (AppUsers), what they use, and storage pressure's purges,
/// including those that wait for an app's process to go. It decides and says what happened in
/// lines; the host publishes them. Touched only on the host's loop.
final class StorageService {
    private let volumes: StorageVolumes
    /// Per-app uids and gids; nil on a host that is not root (apps run as the host's user).
    private var users: AppUsers?
    /// Apps ended by storage pressure (or ending when it came) whose caches are purged once
    /// their process is gone.
    private var pendingPurges: Set<AppID> = []
    private let policy: Policy

    init(volumes: StorageVolumes, users: AppUsers?, policy: Policy) {
        self.volumes = volumes
        self.users = users
        self.policy = policy
    }

    var mechanism: StorageMechanism { volumes.mechanism }
    /// How many times a container was mounted since the host started (a standby made before a
    /// mount misses it).
    var mountChanges: Int { volumes.mountChanges }

    // MARK: Owners

    /// Whether apps run as users of their own (a root host).
    var hasAppUsers: Bool { users != nil }
    var usersLoadWarning: String? { users?.loadWarning }

    /// Gives a newly installed app its user now, unwritten: the first launch writes the table
    /// once for every app installed before it, before its app runs (AppUsers). A reservation
    /// that fails is made again, and reported, at the launch.
    func reserveUser(for bundle: AppBundle) {
        guard policy.perAppUsers else { return }
        _ = try? users?.reserve(app: bundle.identifier)
    }

    /// Who the app runs as and owns its containers: its uid (its gid the same) and its app
    /// groups' gids (with one shared user, its own gid opens every group container); nil on a
    /// host that is not root.
    func owner(of bundle: AppBundle) throws -> (uid: UInt32, groups: [UInt32])? {
        guard var table = users else { return nil }
        defer { users = table }
        let uid = try policy.perAppUsers ? table.uid(forApp: bundle.identifier) : table.sharedUID()
        return (uid, try policy.perAppUsers ? bundle.appGroups.map { try table.gid(forGroup: $0) } : [])
    }

    // MARK: Volumes

    /// Sets up the storage of the app's container and of its app groups' (a file system made
    /// and mounted, or a project quota), before the containers themselves are prepared. Later
    /// launches pay one stat each. Never fails a launch: where the mechanism fails for a
    /// container, it runs unlimited, and a notice says why.
    func prepare(for bundle: AppBundle) -> [StorageVolumes.Notice] {
        owners(of: bundle).flatMap { volumes.prepare($0.owner, limit: $0.limit) }
    }

    /// Whether setting up the storage of the app's container and its app groups' needs work
    /// that would hold the loop (a disk image to make, check, resize or mount): then
    /// `prepareOffTheLoop` does it, and `commit` records it. A stat or two; on the loop.
    func needsPreparingOffTheLoop(_ bundle: AppBundle) -> Bool {
        owners(of: bundle).contains { volumes.needsPreparing($0.owner) }
    }

    /// Sets up the storage of the app's container and its app groups' on the storage's own
    /// serial queue (StorageVolumes.ImageQueue), one launch's after another's; `then` runs on
    /// that queue with what is to be committed. Never fails: a container that cannot be limited
    /// is reported unlimited, with a warning, as `prepare(for:)` does.
    func prepareOffTheLoop(_ bundle: AppBundle, then: @escaping @Sendable (StoragePreparation) -> Void) {
        volumes.images.prepare(owners(of: bundle)) { parts in then(StoragePreparation(parts: parts)) }
    }

    /// On the loop: records what `prepareOffTheLoop` made (each container's volume, the mount
    /// count) and returns the notices to publish, as `prepare(for:)` returns them.
    func commit(_ preparation: StoragePreparation) -> [StorageVolumes.Notice] {
        preparation.parts.flatMap { volumes.commit($0) }
    }

    /// The app's container and its app groups', in that order, with their limits.
    private func owners(of bundle: AppBundle) -> [(owner: StorageVolumes.Owner, limit: UInt64)] {
        [(.app(bundle.identifier), policy.storageLimit)] + bundle.appGroups.map { (.group($0), policy.appGroupStorageLimit) }
    }

    /// What the app's container and its app groups' use now, and their limits.
    func usage(of bundle: AppBundle) -> StorageUsage {
        StorageUsage(mechanism: volumes.mechanism, parts: [volumes.usage(.app(bundle.identifier))] + bundle.appGroups.map { volumes.usage(.group($0)) })
    }

    /// What a container uses now, and its limit.
    func usage(_ owner: StorageVolumes.Owner) -> StoragePart { volumes.usage(owner) }

    /// Where a container is.
    func containerPath(_ owner: StorageVolumes.Owner) -> String { volumes.containerPath(owner) }

    /// Unmounts what an earlier host of the instance left mounted; says what it found.
    func releaseLeftovers() -> [String] { volumes.releaseLeftovers() }

    /// Unmounts every container's file system; says what could not be.
    func unmountAll() -> [String] { volumes.unmountAll() }

    // MARK: Storage pressure

    /// What the host is told of an app when storage runs short.
    struct PressureFacts: Equatable {
        var id: AppID
        var state: AppState
        /// The host already decided to end it (for another reason).
        var isEnding: Bool
        /// It is in the foreground, or launching to it.
        var inForeground: Bool
    }

    /// What storage pressure does to an app, in the order the host does it.
    enum PressureEffect: Equatable {
        /// Empty its caches now (`purge`), and say what was freed.
        case purge(AppID)
        /// End it without a callback; its caches are purged once its process is gone
        /// (`takePendingPurge`).
        case end(AppID, Termination)
        /// Say this of it, as its `storagePressure` event.
        case say(AppID, String)
    }

    /// Storage runs short (StoragePressure decides for each app): an app not running is purged
    /// now; a suspended one is ended and purged once it is gone, as is one being ended already;
    /// a running one is left alone, and the host says why.
    func storagePressure(_ apps: [PressureFacts]) -> [PressureEffect] {
        apps.flatMap { app -> [PressureEffect] in
            switch StoragePressure.decision(state: app.state, isEnding: app.isEnding, inForeground: app.inForeground) {
            case .purge:
                return [.purge(app.id)]
            case .end(let termination):
                pendingPurges.insert(app.id)
                return [
                    .say(app.id, "suspended: ending it (\(TerminationCode.cachesReclaimed)) to reclaim its caches; they are purged once it is gone"),
                    .end(app.id, termination),
                ]
            case .purgeWhenGone:
                pendingPurges.insert(app.id)
                return [.say(app.id, "being ended: its caches are purged once it is gone")]
            case .leave(let reason):
                return [.say(app.id, "left alone: \(reason)")]
            }
        }
    }

    /// Whether the app's caches wait to be purged now that its process is gone.
    func takePendingPurge(_ app: AppID) -> Bool { pendingPurges.remove(app) != nil }

    /// Empties the app's `Library/Caches` and `tmp` (never following a link out of them), which
    /// are kept; its file system is mounted first if this host has not yet. Returns the
    /// warnings of that mount and what was freed (StoragePressure.purged), or why nothing was.
    func purge(_ bundle: AppBundle) -> (warnings: [String], outcome: String) {
        let owner = StorageVolumes.Owner.app(bundle.identifier)
        let path = volumes.containerPath(owner)
        let files = FileManager.default
        guard files.fileExists(atPath: path) || files.fileExists(atPath: volumes.imagePath(owner)) else {
            return ([], "nothing to purge: it has no container yet")
        }
        let warnings = volumes.prepare(owner, limit: policy.storageLimit).filter(\.warning).map(\.text)
        let container: DirectoryHandle
        do {
            container = try DirectoryHandle(path: path)
        } catch {
            return (warnings, "nothing to purge: it has no container yet")
        }
        var totals = ContainerTree.Totals()
        var problems: [String] = []
        for relative in StoragePressure.purgedDirectories {
            do throws(SystemError) {
                var directory = try container.open(EntryName(relative.split(separator: "/")[0].description))
                for name in relative.split(separator: "/").dropFirst() { directory = try directory.open(EntryName(String(name))) }
                if let error = ContainerTree.removeContents(of: directory, totals: &totals) { problems.append("\(relative): \(error)") }
            } catch where error.errno == ENOENT {
                continue
            } catch where error.errno == ELOOP || error.errno == ENOTDIR {
                problems.append("\(relative) is not a directory (a link?): left as it is")
            } catch {
                problems.append("\(relative): \(error)")
            }
        }
        let outcome = StoragePressure.purged(bytes: totals.bytes, files: totals.files, problem: problems.isEmpty ? nil : problems.joined(separator: "; "))
        return (warnings, outcome)
    }
}

/// What setting up an app's storage off the loop made (StorageService.prepareOffTheLoop), for
/// the loop to commit: each container's volume and notices, and whether a mount changed.
struct StoragePreparation: Equatable, Sendable {
    /// The app's container first, then its app groups'.
    var parts: [StorageVolumes.ImageQueue.Prepared]
}
