import Foundation
import AppHostProtocol

/// The host's BGTaskScheduler (docs/background-modes.md, "Background modes"; docs/internals.md, "How the code is laid out"): each
/// app's pending requests, fetch interval and force quit (BackgroundSchedule, kept in its store),
/// the conditions requests wait for (power, network), and the scheduler's clock (the wall clock,
/// moved on by `advance`). It decides what is due and for which apps (a pass over the due work
/// returns what to deliver and what to warn), which apps may be woken (Scheduler+Wake.swift),
/// what is refused and why a request waits, on values the host takes of the apps; the host
/// wakes them. Every change is saved off the loop; `kept` runs once it is on the disk.
/// Touched only on the host's loop.
final class Scheduler {
    private var schedule: BackgroundSchedule
    private(set) var conditions: BackgroundSchedule.Conditions
    private let store: ScheduleStore
    private let policy: Policy
    /// Background app refresh: off, no refresh request is accepted or run, and no fetch.
    let refreshAvailable: Bool
    /// The wall clock (a test's own).
    private let wallClock: () -> Date
    /// What was wrong with the store at start, if anything.
    let loadWarning: String?
    /// Requests an earlier host took and no app began, pending again (`returnTaken`), by app.
    let returned: [(app: String, identifiers: [String])]
    /// Whether a pass over what is due is queued on the loop.
    private var passQueued = false

    init(
        store: ScheduleStore, policy: Policy, refreshAvailable: Bool, power: PowerState, network: NetworkState,
        wallClock: @escaping () -> Date = Date.init
    ) {
        self.store = store
        self.policy = policy
        self.refreshAvailable = refreshAvailable
        self.wallClock = wallClock
        conditions = BackgroundSchedule.Conditions(power: power, network: network)
        (schedule, loadWarning) = store.load()
        returned = schedule.returnTaken()
    }

    /// The app began the task `identifier`: its taken request is spent, on the disk before
    /// anything else happens (a host killed later does not hand it back to run again). On the
    /// loop, as `keepTaken`: once per task, a small file.
    func began(_ identifier: String, for app: String) throws {
        if schedule.began(identifier, for: app) { try store.save(schedule) }
    }

    /// What the app's end means to the scheduler: while the host goes on, what was taken for it
    /// and not begun is spent (a host that ends keeps it for the next: `returnTaken`); the user's
    /// termination is a force quit, and it is not woken until the user opens it (iOS's rule).
    /// Returns which, for the other subsystems (a force-quit app's transfers are cancelled, its
    /// scenes discarded).
    func processEnded(for app: String, termination: Termination, shuttingDown: Bool) -> Ending {
        if !shuttingDown, !schedule.dropTaken(for: app).isEmpty { save() }
        guard termination.isUserForceQuit else { return .ended }
        setForceQuit(true, for: app)
        return .forceQuit
    }

    /// How an app's process ended, as far as the rest of the host cares.
    enum Ending: Equatable {
        case ended
        /// The user force quit it.
        case forceQuit
    }

    /// A pass is wanted (after a state change, an installation): true if one must be queued,
    /// false if one is queued already.
    func queuePass() -> Bool {
        defer { passQueued = true }
        return !passQueued
    }

    /// The queued pass runs now.
    func passRuns() { passQueued = false }

    // MARK: The clock and the conditions

    /// The scheduler's clock, in seconds since 1970: the wall clock, moved on by `advance`.
    var now: Double { wallClock().timeIntervalSince1970 + schedule.clockOffset }

    var clock: SchedulerClock { SchedulerClock(offset: .seconds(double: schedule.clockOffset), now: Date(timeIntervalSince1970: now)) }

    /// Moves the clock on (`heldByTheirInterval` then says which requests whose date has come
    /// wait for the minimum interval).
    func advance(by duration: Duration) {
        schedule.clockOffset += duration.seconds
        save()
    }

    /// Puts the clock back on real time; returns how far ahead it was.
    func resetClock() -> Duration {
        let offset = Duration.seconds(double: schedule.clockOffset)
        schedule.clockOffset = 0
        save()
        return offset
    }

    /// Sets the power source; returns the one before.
    func setPower(_ power: PowerState) -> PowerState {
        defer { conditions.power = power }
        return conditions.power
    }

    /// Sets the network; returns the one before.
    func setNetwork(_ network: NetworkState) -> NetworkState {
        defer { conditions.network = network }
        return conditions.network
    }

    // MARK: What the apps ask

    /// Whether the user force quit the app (no background launch until they open it).
    func isForceQuit(_ app: String) -> Bool { schedule.apps[app]?.forceQuit == true }

    /// The user force quit the app, or opened it again.
    func setForceQuit(_ forceQuit: Bool, for app: String) {
        guard isForceQuit(app) != forceQuit else { return }
        schedule.setForceQuit(forceQuit, for: app)
        save()
    }

    /// Why the host refuses the app's request, if it does: an identifier it may not use, a mode
    /// it lacks, refresh off, or too many pending.
    enum Submission: Equatable {
        case refused(String)
        /// Already pending as it is: nothing to keep.
        case unchanged
        /// Kept: `kept` runs once it is on the disk.
        case submitted
    }

    /// Submits `request` (its dates on the app's wall clock) for `bundle`.
    func submit(_ request: WireTaskRequest, for bundle: AppBundle, kept: (@Sendable () -> Void)?) -> Submission {
        var request = request
        // The app's dates are on its wall clock; keep their distance from now on the
        // scheduler's clock, which `advance` may have moved on.
        request.earliestBeginDate = request.earliestBeginDate.map { $0 + schedule.clockOffset }
        let mode: BackgroundMode = request.kind == .appRefresh ? .fetch : .processing
        if !bundle.permittedTaskIdentifiers.contains(request.identifier) {
            return .refused("\(request.identifier) is not permitted (notPermitted)")
        }
        if !bundle.backgroundModes.contains(mode) { return .refused("the request needs \(mode.rawValue) in UIBackgroundModes (notPermitted)") }
        if !refreshAvailable { return .refused("background app refresh is off (unavailable)") }
        let before = schedule
        do {
            try schedule.submit(
                request, for: bundle.identifier, maximumRefresh: policy.maximumPendingRefreshRequests,
                maximumProcessing: policy.maximumPendingProcessingRequests)
        } catch {
            return .refused("too many pending requests (tooManyPendingTaskRequests)")
        }
        guard schedule != before else { return .unchanged }
        save(then: kept)
        return .submitted
    }

    /// A request in one line, for the event that says it is kept: "BGAppRefreshTaskRequest
    /// com.example.refresh, earliest 2026-…, requires network".
    static func describe(_ request: WireTaskRequest) -> String {
        var parts = [request.kind == .appRefresh ? "BGAppRefreshTaskRequest \(request.identifier)" : "BGProcessingTaskRequest \(request.identifier)"]
        if let date = request.earliestBeginDate {
            parts.append("earliest \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: date)))")
        }
        if request.requiresExternalPower { parts.append("requires external power") }
        if request.requiresNetworkConnectivity { parts.append("requires network") }
        return parts.joined(separator: ", ")
    }

    /// Cancels the app's request of `identifier` (nil: all); returns the identifiers cancelled.
    func cancel(_ identifier: String?, for app: String) -> [String] {
        let removed = schedule.cancel(identifier, for: app)
        if !removed.isEmpty { save() }
        return removed
    }

    /// Sets the app's fetch interval (nil: never); `kept` runs once it is on the disk.
    func setFetchInterval(_ interval: Double?, for app: String, kept: (@Sendable () -> Void)?) {
        schedule.setFetchInterval(interval, for: app, now: now, floor: policy.minimumBackgroundFetchInterval.seconds)
        save(then: kept)
    }

    /// What the app's `setMinimumBackgroundFetchInterval(_:)` gets.
    enum FetchIntervalAnswer: Equatable {
        /// Without the fetch mode it gets no fetch: this warning says so.
        case refused(String)
        /// Kept: "at least 15 min between fetches", "never".
        case granted(String)
    }

    /// The answer to an app with `modes` asking for `interval` between fetches (nil: never); a
    /// granted one is kept with `setFetchInterval`.
    func answerFetchInterval(_ interval: Double?, modes: Set<BackgroundMode>) -> FetchIntervalAnswer {
        guard modes.contains(.fetch) else {
            return .refused("setMinimumBackgroundFetchInterval(_:) called, but Info.plist UIBackgroundModes has no fetch: the app gets no background fetch")
        }
        let floor = policy.minimumBackgroundFetchInterval
        return .granted(interval.map { "at least \(Duration.seconds(double: max($0, floor.seconds)).formatted) between fetches" } ?? "never")
    }

    /// `run-task`: the kind of task `identifier` is for the app (its pending request's, else its
    /// last request's, else refresh with the fetch mode), and its pending request, taken: it runs
    /// early, and the next run keeps its interval from now.
    func runEarly(_ identifier: String, for bundle: AppBundle) -> (kind: WireTaskRequest.Kind, pending: WireTaskRequest?) {
        let entry = schedule.apps[bundle.identifier]
        let pending = entry?.requests.first { $0.identifier == identifier }
        let kind = pending?.kind ?? entry?.taskKinds[identifier] ?? (bundle.backgroundModes.contains(.fetch) ? .appRefresh : .processing)
        return (kind, pending)
    }

    /// The task `identifier` runs now (run early by `run-task`): a pending request of it is taken.
    func ran(_ identifier: String, for app: String) {
        _ = schedule.cancel(identifier, for: app)
        schedule.ran(identifier, for: app, at: now)
        save()
    }

    // MARK: What is due

    /// The installed apps' identifiers the scheduler holds something for.
    var apps: Dictionary<String, BackgroundSchedule.AppEntry>.Keys { schedule.apps.keys }

    /// Takes what is due for the app now (`running`: task identifiers under way, which wait for
    /// their task to end). Nothing is saved: `keepTaken` does, before any of it runs.
    func takeDue(for app: String, running: Set<String>) -> (fetch: Bool, tasks: [WireTaskRequest]) {
        schedule.takeDue(
            for: app, now: now, conditions: conditions, refreshAvailable: refreshAvailable,
            fetchFloor: policy.minimumBackgroundFetchInterval.seconds, running: running, minimumInterval: minimumInterval)
    }

    /// What a pass over the due work decided: what to hand to which app and what to warn, in
    /// the order to do it, and how what it took is to be saved before any of it is done.
    struct DuePass: Equatable {
        enum Effect: Equatable {
            /// Say this warning as the app's event.
            case warn(AppID, String)
            /// Hand the event to the app, launching or resuming it in the background as needed.
            case deliver(AppID, BackgroundEvent)
        }

        /// How the pass's changes are kept.
        enum Save: Equatable {
            /// Off the loop, coalesced: nothing taken is run or dropped.
            case later
            /// Now (`keepTaken`), before anything is delivered or said: a request taken runs,
            /// or is dropped, once its removal is on the disk (a host killed in between neither
            /// ran it nor lost it, and a command that comes next sees it under way).
            case now
        }

        var effects: [Effect] = []
        /// Nil: nothing changed.
        var save: Save?
    }

    /// Takes every due fetch and request whose conditions hold, for the apps among `apps` (in
    /// installation order) that may be woken now: a fetch for an app with the fetch mode, a
    /// request for an app that may still run it. A due request of an app whose launch is over
    /// without a launch handler for it is spent, dropped with a warning. Nothing is saved: the
    /// host does as `save` says, then performs the effects.
    func takeDueWork(apps: [AppFacts], shuttingDown: Bool) -> DuePass {
        var pass = DuePass()
        var deliveries: [DuePass.Effect] = []
        var changed = false
        for app in apps where mayWake(app, shuttingDown: shuttingDown) {
            let (fetch, tasks) = takeDue(for: app.identifier, running: app.runningTasks)
            changed = changed || fetch || !tasks.isEmpty
            if fetch && app.backgroundModes.contains(.fetch) { deliveries.append(.deliver(app.id, BackgroundEvent(kind: .fetch))) }
            for request in tasks {
                if Self.lacksHandler(app, for: request.identifier) {
                    _ = schedule.began(request.identifier, for: app.identifier)  // spent: dropped, never run
                    pass.effects.append(.warn(app.id, "dropped the due request \(request.identifier): the app registered no launch handler for it"))
                    continue
                }
                deliveries.append(.deliver(app.id, BackgroundEvent(
                    kind: request.kind == .appRefresh ? .appRefresh : .processing, taskIdentifier: request.identifier,
                    requiresExternalPower: request.requiresExternalPower, requiresNetworkConnectivity: request.requiresNetworkConnectivity)))
            }
        }
        pass.effects += deliveries
        if changed { pass.save = pass.effects.isEmpty ? .later : .now }
        return pass
    }

    /// How long until something of these apps next becomes due (nil: nothing will be), for the
    /// host's timer, which runs on the monotonic clock: the scheduler's dates are the wall
    /// clock's (moved on by `advance`), so each pass sets it again from the wall clock's now.
    func untilNextDue(apps names: [String]) -> Duration? {
        let now = now
        return nextDate(apps: names).map { .seconds(double: max(0, $0 - now)) }
    }

    /// Saves what `takeDue` took, now, on the caller's thread: a request taken runs once its
    /// removal is on the disk (a host killed in between neither ran it nor lost it).
    func keepTaken() throws {
        try store.save(schedule)
    }

    /// Saves off the loop (coalesced); `then` runs on the writer's thread once it is written.
    func save(then: (@Sendable () -> Void)? = nil) {
        store.store.save(schedule, then: then)
    }

    /// When something of these apps next becomes due, on the scheduler's clock.
    func nextDate(apps names: [String]) -> Double? {
        schedule.nextDate(after: now, apps: names, conditions: conditions, refreshAvailable: refreshAvailable, minimumInterval: minimumInterval)
    }

    /// The requests whose date has come but whose identifier ran less than the minimum interval
    /// ago.
    var heldByTheirInterval: [String] {
        let now = now
        return schedule.apps.values.flatMap { entry in
            entry.requests.filter { ($0.earliestBeginDate ?? 0) <= now && entry.notBefore($0, minimumInterval: minimumInterval) > now }
        }.map(\.identifier).sorted()
    }

    /// The policy's least time between two runs of one task identifier of this kind, in seconds.
    func minimumInterval(_ kind: WireTaskRequest.Kind) -> Double {
        (kind == .appRefresh ? policy.minimumRefreshTaskInterval : policy.minimumProcessingTaskInterval).seconds
    }

    /// What the app is told of BGTaskScheduler at its launch: its modes and permitted
    /// identifiers, its pending requests (on its wall clock), the limits, whether refresh is on.
    func launchConfiguration(for bundle: AppBundle) -> WireBackgroundTasks {
        WireBackgroundTasks(
            modes: bundle.backgroundModes.map(\.rawValue).sorted(), permittedIdentifiers: bundle.permittedTaskIdentifiers,
            pending: pending(for: bundle.identifier),
            maximumPendingRefresh: policy.maximumPendingRefreshRequests, maximumPendingProcessing: policy.maximumPendingProcessingRequests,
            available: refreshAvailable)
    }

    /// The app's pending requests, their dates on the app's wall clock (for its launch).
    func pending(for app: String) -> [WireTaskRequest] {
        (schedule.apps[app]?.requests ?? []).map { request in
            var onAppClock = request
            onAppClock.earliestBeginDate = request.earliestBeginDate.map { $0 - schedule.clockOffset }
            return onAppClock
        }
    }

    /// How many requests are pending, of every app.
    var pendingCount: Int { schedule.apps.values.reduce(0) { $0 + $1.requests.count } }

    /// Each pending request of the app, and what it waits for (nil: nothing the scheduler knows
    /// of; `inForeground`: the app is in the foreground).
    func waiting(for app: String, inForeground: Bool) -> [(request: WireTaskRequest, waiting: String?)] {
        guard let entry = schedule.apps[app] else { return [] }
        let now = now
        return entry.requests.map { request in
            let unmet = conditions.unmet(by: request)
            let next = entry.notBefore(request, minimumInterval: minimumInterval)
            let waiting: String?
            if entry.forceQuit {
                waiting = "the user force quit the app"
            } else if request.kind == .appRefresh && !refreshAvailable {
                waiting = "background app refresh is off"
            } else if let date = request.earliestBeginDate, date > now, date >= next {
                waiting = "its earliest begin date, \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: date)))"
            } else if next > now {
                let interval = Duration.seconds(minimumInterval(request.kind)).formatted
                let last = HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: entry.lastRuns?[request.identifier] ?? 0))
                waiting = "its minimum interval between runs, \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: next))) "
                    + "(\(interval) after \(request.identifier) last began, at \(last))"
            } else if !unmet.isEmpty {
                waiting = unmet.joined(separator: " and ")
            } else if inForeground {
                waiting = "the app to leave the foreground"
            } else {
                waiting = nil
            }
            return (request, waiting)
        }
    }
}
