import Foundation

/// Every store of a host's state directory, owned in one place (docs/storage.md, "What survives the
/// host"): each written through `StateStore` (the transfers' records through `TransferStore`),
/// off the loop. The supervisor holds this, not the stores one by one: it flushes them all before
/// another host may take the instance, and hears of any write that fails.
final class HostStores: Sendable {
    /// STATE/background-tasks.json: requests, fetch intervals, force quits, the scheduler's clock.
    let schedule: ScheduleStore
    /// STATE/scene-sessions.json, by bundle identifier.
    let scenes: StateStore<[String: SceneSessions]>
    /// STATE/location-authorization.json, by bundle identifier.
    let location: StateStore<[String: LocationAuthorization]>
    /// STATE/transfers/: a record a file, with part files and upload bodies.
    let transfers: TransferStore
    /// STATE/notifications.json: each app's notification authorization, pending and delivered
    /// notifications, by bundle identifier.
    let notifications: StateStore<[String: AppNotifications]>

    init(stateDirectory: URL) {
        schedule = ScheduleStore(stateDirectory: stateDirectory)
        scenes = StateStore(json: stateDirectory.appendingPathComponent("scene-sessions.json").path, what: "the scene sessions", readable: true)
        location = StateStore(
            json: stateDirectory.appendingPathComponent("location-authorization.json").path, what: "the location authorizations",
            readable: true)
        transfers = TransferStore(stateDirectory: stateDirectory)
        notifications = StateStore(
            json: stateDirectory.appendingPathComponent("notifications.json").path, what: "the notifications", readable: true)
    }

    /// Where a write that fails is reported (the host publishes a warning).
    func onFailure(_ report: @escaping @Sendable (String) -> Void) {
        schedule.store.onFailure(report)
        scenes.onFailure(report)
        location.onFailure(report)
        transfers.onFailure(report)
        notifications.onFailure(report)
    }

    /// Returns once every save queued so far is written.
    func flush() {
        schedule.store.flush()
        scenes.flush()
        location.flush()
        transfers.flush()
        notifications.flush()
    }
}
