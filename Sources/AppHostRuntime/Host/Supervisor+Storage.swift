#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostSystem

/// Storage (StorageService owns it): its notices published, and storage pressure, which
/// Rules/StoragePressure.swift decides for each app and this performs.
extension Supervisor {
    /// Sets up the storage of the app's containers before they are prepared (StorageService).
    func prepareStorage(for bundle: AppBundle, run: AppRun) {
        for notice in storage.prepare(for: bundle) {
            publish(HostEvent(
                time: Date(), app: bundle.identifier, name: bundle.name, event: notice.warning ? .warning : .storage,
                detail: notice.text, elapsed: notice.elapsed), run: run)
        }
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
    /// running in the foreground or the background is left alone (StoragePressure decides). One
    /// `storagePressure` event per app says what was freed, in bytes, or why it was left.
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
                    storage.purgeWhenGone(record.id)
                    announce(record, "suspended: ending it (\(TerminationCode.cachesReclaimed)) to reclaim its caches; they are purged once it is gone")
                    handle(record, run, .enforce(termination))
                case .purgeWhenGone:
                    storage.purgeWhenGone(record.id)
                    announce(record, "being ended: its caches are purged once it is gone")
                case .leave(let reason):
                    announce(record, "left alone: \(reason)")
                }
            }
        }
    }

    /// Purges the app's caches if storage pressure is waiting for its process to go.
    func purgeIfPending(_ record: AppRecord) {
        if storage.takePendingPurge(record.id) { purge(record) }
    }

    private func announce(_ record: AppRecord, _ detail: String) {
        let run = record.run
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name,
            pid: run?.machine.isAlive == true ? run?.process?.pid : nil, event: .storagePressure,
            state: currentState(of: record), detail: detail), run: run?.machine.isAlive == true ? run : nil)
    }

    private func purge(_ record: AppRecord) {
        let bundle = record.bundle
        let (warnings, outcome) = storage.purge(bundle)
        for warning in warnings {
            publish(HostEvent(time: Date(), app: bundle.identifier, name: bundle.name, event: .warning, detail: warning), run: nil)
        }
        announce(record, outcome)
    }
}
