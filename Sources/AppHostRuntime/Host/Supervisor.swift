public import Foundation
import AppHostProtocol

/// The host (docs/internals.md, "How the code is laid out"): runs installed apps in their own processes
/// and drives each through its life cycle. This is its public face, the command language's
/// verbs; each is carried out on the host's loop (`HostLoop`), which owns the subsystems that
/// decide.
public final class Supervisor: Sendable {
    public let configuration: Configuration
    /// What the host found at its start: how it suspends, confines and limits apps, how many fit.
    public let facts: HostFacts
    let loop: HostLoop

    /// Creates a host. `observer` receives every event, on the host's loop.
    public init(
        configuration: Configuration, clock: any HostClock = MonotonicClock(),
        observer: @escaping @Sendable (HostEvent) -> Void
    ) throws {
        loop = try HostLoop(configuration: configuration, clock: clock, observer: observer)
        self.configuration = configuration
        facts = loop.facts
    }

    /// Delivers `application(_:performFetchWithCompletionHandler:)` now (`fetch APP`).
    public func fetch(_ name: String) throws -> String {
        try loop.fetch(name)
    }

    /// Runs a registered BGTaskScheduler task now, due or not (`run-task APP IDENTIFIER`). Its
    /// kind is the pending request's, else that of the identifier's last request, else a refresh
    /// task if the app has the fetch mode.
    public func runTask(_ name: String, identifier: String) throws -> String {
        try loop.runTask(name, identifier: identifier)
    }

    /// Ends background work now (`expire APP [IDENTIFIER]`): the running BGTaskScheduler task with
    /// this identifier, or every running task and the background time of every open
    /// `beginBackgroundTask`. Expiration handlers run now; the grace period starts.
    public func expire(_ name: String, identifier: String?) throws -> String {
        try loop.expire(name, identifier: identifier)
    }

    /// Delivers a remote notification (`push APP FILE.json`). Only a background notification
    /// wakes an app: its `aps` must have `"content-available": 1`.
    public func push(_ name: String, payload: Data, source: String) throws -> String {
        try loop.push(name, payload: payload, source: source)
    }

    /// Sets the simulated power source (`power plugged|battery`). Unplugging ends processing
    /// tasks that need external power; plugging in may make requests due.
    public func setPower(_ state: PowerState) -> String {
        loop.setPower(state)
    }

    /// Sets the simulated network (`network online|offline`).
    public func setNetwork(_ state: NetworkState) -> String {
        loop.setNetwork(state)
    }

    /// Moves the scheduler's clock on (`advance SECONDS`): requests and fetches due by then run.
    /// Only the scheduler's dates move; background budgets and watchdogs keep real time.
    public func advance(by duration: Duration) -> String {
        loop.advance(by: duration)
    }

    /// Puts the scheduler's clock back on real time (`advance reset`), dropping the offset
    /// `advance` gave it, which the store keeps across hosts. Pending requests keep their dates.
    public func resetClock() -> String {
        loop.resetClock()
    }

    /// The scheduler's clock: its offset from real time and its time now.
    public var schedulerClock: SchedulerClock {
        loop.schedulerClock
    }

    /// Every pending request of the installed apps, and why each waits.
    public func pendingTaskRequests() -> [PendingTaskRequest] {
        loop.pendingTaskRequests()
    }

    /// Whether the next launch would take an app process made ahead that has finished starting
    /// (docs/launching.md, "How apps are launched"); nil under a launcher that makes none. For the
    /// benchmark, which measures launches from a ready one.
    public var isStandbyWarm: Bool? {
        loop.isStandbyWarm
    }

    /// Sends the foreground app to the background (`home`).
    public func home() {
        loop.home()
    }

    /// Why `name` names no installed app ("no app named Nots; did you mean Notes? installed: …"),
    /// or nil when it names one: for `apphost ctl events --app`.
    public func unknownApp(_ name: String) -> String? {
        loop.unknownApp(name)
    }

    public func openSwitcher() throws -> String {
        try loop.openSwitcher()
    }

    /// Interrupts the foreground app, for `duration` or until `open`/`home` (`interrupt APP`).
    public func interrupt(_ name: String, for duration: Duration?) throws {
        try loop.interrupt(name, for: duration)
    }

    /// Terminates an app (`terminate APP`): `applicationWillTerminate` if it runs, nothing if it
    /// is suspended (a force quit).
    public func terminate(_ name: String) throws {
        try loop.terminate(name)
    }

    /// Sends `applicationDidReceiveMemoryWarning` to the named app, or to every running app.
    public func memoryWarning(_ name: String?) throws {
        try loop.memoryWarning(name)
    }

    /// Simulates memory running short (`memory-pressure [MIB]`): running apps get
    /// `applicationDidReceiveMemoryWarning`; after the policy's grace, apps are ended without a
    /// callback (jetsam "vm-pageshortage"), suspended ones least recently used first and the
    /// foreground app last, until all apps together use at most `target` bytes. Without a
    /// target, every suspended app is ended and no running one.
    public func memoryPressure(target: UInt64?) {
        loop.memoryPressure(target: target)
    }

    /// Interrupts APP's audio session (`audio-interrupt APP`), or ends the interruption
    /// (`audio-resume APP`): AVAudioSession.interruptionNotification with type began or ended.
    public func audioInterruption(_ name: String, began: Bool) throws {
        try loop.audioInterruption(name, began: began)
    }

    public func voipPush(_ name: String, payload: Data, source: String) throws -> String {
        try loop.voipPush(name, payload: payload, source: source)
    }

    /// Makes an app known to the host. It does not launch it.
    public func install(_ bundle: AppBundle) throws {
        try loop.install(bundle)
    }

    /// The installed apps' bundles, in installation order.
    public var bundles: [AppBundle] {
        loop.bundles
    }

    /// Sets the device's position (`location set LAT,LON`); a route being replayed stops.
    public func setLocation(_ coordinate: Coordinate) -> String {
        loop.setLocation(coordinate)
    }

    /// Replays a GPX route (`location route FILE.gpx [--speed M/S]`): the device moves along it on
    /// the host's clock, and updates reach apps every `locationUpdateInterval`.
    public func replayRoute(_ route: LocationRoute, name: String) -> String {
        loop.replayRoute(route, name: name)
    }

    /// Clears the simulated position (`location clear`): no updates until one is set again.
    public func clearLocation() -> String {
        loop.clearLocation()
    }

    /// Sets APP's location authorization (`authorize APP location always|whenInUse|denied`),
    /// kept in the state directory; a running app is told once it is kept.
    public func authorizeLocation(_ name: String, _ authorization: LocationAuthorization) async throws -> String {
        try await loop.authorizeLocation(name, authorization)
    }

    /// Sets APP's notification authorization (`authorize APP notifications granted|denied`),
    /// kept in the state directory; a running app is told once it is kept (which answers a
    /// `requestAuthorization` that waits for it).
    public func authorizeNotifications(_ name: String, _ authorization: NotificationAuthorization) async throws -> String {
        try await loop.authorizeNotifications(name, authorization)
    }

    /// Every pending and delivered notification of the installed apps (`notifications`): per
    /// app in installation order, pending ones by due time, then delivered ones.
    public func notificationListing() -> [NotificationListing] {
        loop.notificationListing()
    }

    /// The user taps APP's delivered notification (`tap-notification APP IDENTIFIER [ACTION]
    /// [--text TEXT]`): it leaves Notification Center. The default action, or one with
    /// `.foreground`, opens the app (launching it if it is not running) and its center
    /// delegate's `didReceive` runs once it is active; any other action runs the app in the
    /// background (launching or resuming it there) for `didReceive`; a dismissal reaches the app
    /// only if its category has `.customDismissAction`.
    public func tapNotification(_ name: String, identifier: String, action: String? = nil, text: String? = nil) throws -> String {
        try loop.tapNotification(name, identifier: identifier, action: action, text: text)
    }

    /// Brings `name` to the foreground in a new scene (`open APP --new-scene`): connected in
    /// place of the scene in the foreground if the app is there, else the one it comes with.
    public func openNewScene(_ name: String) throws {
        try loop.openNewScene(name)
    }

    /// Disconnects scene `session` of `name` (`close-scene`): `sceneDidDisconnect`; the session
    /// stays, and `open` or `--new-scene` later reconnect it or another.
    public func closeScene(_ name: String, _ session: String) throws {
        try loop.closeScene(name, session)
    }

    /// Discards scene session `session` of `name` (`discard-scene`): its scene is disconnected
    /// and `application(_:didDiscardSceneSessions:)` is called, at once if the app runs.
    public func discardScene(_ name: String, _ session: String) throws {
        try loop.discardScene(name, session)
    }

    /// The scene sessions of every app that adopts scenes, with their states (`scenes`).
    public func sceneListing() -> [SceneListing] {
        loop.sceneListing()
    }

    /// Waits until each named app (nil: every installed app) has settled: no callback running,
    /// and the app active, inactive (interrupted), in the background, suspended, or not running.
    /// An app held in the background by its own work (background tasks, a fetch, a task) has
    /// settled: the host waits for nothing more from it. Throws, naming what each app is in the
    /// middle of, if they have not all settled within `timeout` (default: the policy's launch
    /// timeout, the longest any transition is allowed before a watchdog ends it).
    public func settle(_ names: [String]? = nil, timeout: Duration? = nil) async throws {
        try await loop.settle(names, timeout: timeout)
    }

    /// Waits, within `settle`'s bound, until the apps `command` concerns have settled
    /// (`HostCommand.settling`). `ps` then shows the apps as they are, settled or not; any other
    /// command fails.
    package func settle(before command: HostCommand) async throws {
        try await loop.settle(before: command)
    }

    /// Unmounts every container's file system now, for a host that exits without shutting down
    /// (its first app could not launch). Callable from any thread, the observer's included.
    public func releaseStorage() {
        loop.releaseStorage()
    }

    /// Storage runs short, on demand (`storage-pressure`), as iOS reclaims disk space: the
    /// `Library/Caches` and `tmp` of every app that is not running are emptied; a suspended app
    /// is ended first (0xbaddd15c, no callback) and emptied once its process is gone; an app
    /// running in the foreground or the background is left alone (StoragePressure decides). One
    /// `storagePressure` event per app says what was freed, in bytes, or why it was left.
    public func storagePressure() {
        loop.storagePressure()
    }

    /// Every transfer the host keeps, for `transfers`.
    public func transferListing() -> [TransferListing] {
        loop.transferListing()
    }

    /// Launches an app: to the foreground (sending the current foreground app to the
    /// background) or directly into the background. An app already running — launched into the
    /// background by the scheduler, a fetch or a push before this launch — is opened instead
    /// (sequence 3) by a foreground launch and left where it is by a background one.
    public func launch(_ name: String, kind: LaunchKind) throws {
        try loop.launch(name, kind: kind)
    }

    /// Brings an app to the foreground, launching it if it is not running (`open APP`).
    public func open(_ name: String) throws {
        try loop.open(name)
    }

    /// Launches an app into the background (sequence 5), or resumes a suspended one there
    /// (sequence 6); once its work and grants end it is suspended again (`wake APP`).
    public func wake(_ name: String) throws {
        try loop.wake(name)
    }

    /// Waits until the app is in `state`; false if `timeout` passes first.
    public func wait(for name: String, state: AppState, timeout: Duration) async throws -> Bool {
        try await loop.wait(for: name, state: state, timeout: timeout)
    }

    /// The state of every installed app, for `ps`.
    public func status() -> [AppStatus] {
        loop.status()
    }

    /// Terminates every running app as sequence 7 says and returns when all have ended; then
    /// removes the host's cgroup. No app launches after this.
    public func shutdown() async {
        await loop.shutdown()
    }

    /// Kills every app process at once, without callbacks (a second Ctrl-C).
    public func killAll() {
        loop.killAll()
    }
}
