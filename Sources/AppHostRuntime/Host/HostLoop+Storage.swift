#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostProtocol
import AppHostSystem

/// Storage (StorageService owns it): its notices published, and storage pressure, which
/// StorageService decides for each app (Rules/StoragePressure.swift) and this performs.
extension HostLoop {
    /// Sets up the storage of the app's containers before they are prepared (StorageService):
    /// on the loop where it is cheap (a stat, a quota); else off it, and true: the launch goes on
    /// at `.storagePrepared`.
    func prepareStorage(for bundle: AppBundle, run: AppRun, reason: String, callbacks: [WireCallbackRequest]) -> Bool {
        if storage.needsPreparingOffTheLoop(bundle) {
            storage.prepareOffTheLoop(bundle) { [weak self, id = run.id] preparation in
                self?.post(.storagePrepared(id, preparation, reason: reason, callbacks: callbacks))
            }
            return true
        }
        publishStorage(storage.prepare(for: bundle), of: bundle, run: run)
        return false
    }

    /// What the storage queue made for a launch is recorded (whether or not its run is still
    /// there: the mount count must have it), said, and the launch goes on.
    func storagePrepared(_ id: RunID, _ preparation: StoragePreparation, reason: String, callbacks: [WireCallbackRequest]) {
        let notices = storage.commit(preparation)
        guard let (record, run) = current(id) else { return }
        publishStorage(notices, of: record.bundle, run: run)
        resumeSpawn(record, run, reason: reason, callbacks: callbacks)
    }

    private func publishStorage(_ notices: [StorageVolumes.Notice], of bundle: AppBundle, run: AppRun) {
        for notice in notices {
            publish(HostEvent(
                time: Date(), app: bundle.identifier, name: bundle.name, event: notice.warning ? .warning : .storage,
                detail: notice.text, elapsed: notice.elapsed), run: run)
        }
    }

    /// Marks the supervisor's queue, so that `releaseStorage` can tell whether it runs there.
    static let queueKey = DispatchSpecificKey<Void>()

    /// Unmounts every container's file system now, for a host that exits without shutting down
    /// (its first app could not launch). Callable from any thread, the observer's included.
    func releaseStorage() {
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
    func storagePressure() {
        queue.sync {
            let facts = apps.map { record in
                StorageService.PressureFacts(
                    id: record.id, state: currentState(of: record), isEnding: record.run?.machine.isEnding ?? false,
                    inForeground: record.run?.machine.isInForeground ?? false)
            }
            for effect in storage.storagePressure(facts) {
                switch effect {
                case .purge(let id):
                    purge(apps[id])
                case .end(let id, let termination):
                    guard let run = apps[id].run else { continue }
                    handle(apps[id], run, .enforce(termination))
                case .say(let id, let detail):
                    announce(apps[id], detail)
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
