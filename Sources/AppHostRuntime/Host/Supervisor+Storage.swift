#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostSystem

/// Storage: each app's container and app-group containers held to the policy's limits
/// (Environment/StorageVolumes.swift), their usage for `ps` and reports, and storage pressure
/// (Rules/StoragePressure.swift decides what happens to each app; this performs it).
extension Supervisor {
    /// Sets up the storage of the app's container and of its app groups' (a file system made
    /// and mounted, or a project quota), before the containers themselves are prepared. Later
    /// launches pay one stat each. Never fails a launch: where the mechanism fails for a
    /// container, it runs unlimited and a warning says why.
    func prepareStorage(for bundle: AppBundle, run: AppRun) {
        let policy = configuration.policy
        var notices = storage.prepare(.app(bundle.identifier), limit: policy.storageLimit)
        for group in bundle.appGroups { notices += storage.prepare(.group(group), limit: policy.appGroupStorageLimit) }
        for notice in notices {
            publish(HostEvent(
                time: Date(), app: bundle.identifier, name: bundle.name, event: notice.warning ? .warning : .storage,
                detail: notice.text, elapsed: notice.elapsed), run: run)
        }
    }

    /// What the app's container and its app groups' use now, and their limits.
    func storageUsage(of bundle: AppBundle) -> StorageUsage {
        StorageUsage(
            mechanism: facts.storageMechanism,
            parts: [storage.usage(.app(bundle.identifier))] + bundle.appGroups.map { storage.usage(.group($0)) })
    }

    /// Marks the supervisor's queue, so that `releaseStorage` can tell whether it runs there.
    static let queueKey = DispatchSpecificKey<Void>()

    /// Unmounts every container's file system now, for a host that exits without shutting down
    /// (its first app could not launch). Callable from any thread, the observer's included.
    public func releaseStorage() {
        if DispatchQueue.getSpecific(key: Self.queueKey) != nil {
            _ = storage.unmountAll()
        } else {
            queue.sync { _ = storage.unmountAll() }
        }
    }

    // MARK: Storage pressure

    /// Storage runs short, on demand (`storage-pressure`), as iOS reclaims disk space: the
    /// `Library/Caches` and `tmp` of every app that is not running are emptied; a suspended app
    /// is ended first (0xbaddd15c, no callback) and emptied once its process is gone; an app
    /// running in the foreground or the background is left alone. One `storagePressure` event
    /// per app says what was freed, in bytes, or why it was left.
    public func storagePressure() {
        queue.sync {
            for record in apps {
                let run = record.run
                let decision = StoragePressure.decision(
                    state: currentState(of: record), isEnding: run?.machine.isEnding ?? false,
                    inForeground: run?.machine.isInForeground ?? false)
                switch decision {
                case .purge:
                    purge(record)
                case .end(let termination):
                    guard let run else { continue }
                    pendingPurges.insert(record.id)
                    announce(record, "suspended: ending it (\(TerminationCode.cachesReclaimed)) to reclaim its caches; they are purged once it is gone")
                    handle(record, run, .enforce(termination))
                case .purgeWhenGone:
                    pendingPurges.insert(record.id)
                    announce(record, "being ended: its caches are purged once it is gone")
                case .leave(let reason):
                    announce(record, "left alone: \(reason)")
                }
            }
        }
    }

    /// Purges the app's caches if storage pressure is waiting for its process to go.
    func purgeIfPending(_ record: AppRecord) {
        guard pendingPurges.remove(record.id) != nil else { return }
        purge(record)
    }

    private func announce(_ record: AppRecord, _ detail: String) {
        let run = record.run
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name,
            pid: run?.machine.isAlive == true ? run?.process?.pid : nil, event: .storagePressure,
            state: currentState(of: record), detail: detail), run: run?.machine.isAlive == true ? run : nil)
    }

    /// Empties the app's `Library/Caches` and `tmp` (never following a link out of them), which
    /// are kept; its file system is mounted first if this host has not yet.
    private func purge(_ record: AppRecord) {
        let bundle = record.bundle
        let path = storage.containerPath(.app(bundle.identifier))
        guard FileManager.default.fileExists(atPath: path) || FileManager.default.fileExists(atPath: storage.imagePath(.app(bundle.identifier))) else {
            announce(record, "nothing to purge: it has no container yet")
            return
        }
        for notice in storage.prepare(.app(bundle.identifier), limit: configuration.policy.storageLimit) where notice.warning {
            publish(HostEvent(time: Date(), app: bundle.identifier, name: bundle.name, event: .warning, detail: notice.text), run: nil)
        }
        let container: DirectoryHandle
        do {
            container = try DirectoryHandle(path: path)
        } catch {
            announce(record, "nothing to purge: it has no container yet")
            return
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
        announce(record, StoragePressure.purged(bytes: totals.bytes, files: totals.files, problem: problems.isEmpty ? nil : problems.joined(separator: "; ")))
    }
}
