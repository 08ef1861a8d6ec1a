#if canImport(Glibc)
import Glibc
#endif
package import Foundation
package import AppHostProtocol
import AppHostSystem

/// The host's simulated power source: processing requests may require external power.
public enum PowerState: String, Sendable, CaseIterable {
    case plugged
    case battery
}

/// The host's simulated network: processing requests may require connectivity.
public enum NetworkState: String, Sendable, CaseIterable {
    case online
    case offline
}

/// What the host's scheduler keeps for each app: its pending BGTaskScheduler requests, its
/// background-fetch interval and whether the user force quit it. Persisted by `ScheduleStore`,
/// so it survives a host restart. Times are seconds since 1970 on the scheduler's clock: the
/// wall clock moved on by every `advance` so far, which is persisted too.
package struct BackgroundSchedule: Codable, Equatable, Sendable {
    package struct AppEntry: Codable, Equatable, Sendable {
        package var requests: [WireTaskRequest] = []
        /// `setMinimumBackgroundFetchInterval(_:)`, in seconds; nil: never (the default).
        package var fetchInterval: Double?
        /// When the next background fetch is due.
        package var nextFetch: Double?
        /// Force quit by the user: no background launch until the user opens it again.
        package var forceQuit = false
        /// The kind of each identifier's last request: what `run-task` runs when none is pending.
        package var taskKinds: [String: WireTaskRequest.Kind] = [:]
        /// When each identifier's task last began, on the scheduler's clock: the next may begin a
        /// minimum interval later (absent from stores written before it was kept).
        package var lastRuns: [String: Double]?

        package init() {}

        /// Requests taken to run whose task the app has not begun yet (its launch handler not
        /// yet called): a host that ends before it has, hands them back as pending
        /// (`returnTaken`); once begun they are gone, as on iOS (absent from older stores).
        package var taken: [WireTaskRequest]?

        var isEmpty: Bool {
            requests.isEmpty && fetchInterval == nil && !forceQuit && taskKinds.isEmpty && (lastRuns ?? [:]).isEmpty && (taken ?? []).isEmpty
        }

        /// When `request` may next begin: its earliest begin date, and a minimum interval
        /// after its identifier's last run.
        package func notBefore(_ request: WireTaskRequest, minimumInterval: (WireTaskRequest.Kind) -> Double) -> Double {
            let afterLastRun = lastRuns?[request.identifier].map { $0 + minimumInterval(request.kind) } ?? 0
            return max(request.earliestBeginDate ?? 0, afterLastRun)
        }
    }

    /// The conditions a processing request may need.
    package struct Conditions: Equatable, Sendable {
        package var power: PowerState
        package var network: NetworkState

        package init(power: PowerState, network: NetworkState) {
            self.power = power
            self.network = network
        }

        /// Which of the request's conditions do not hold now; empty when it may run.
        package func unmet(by request: WireTaskRequest) -> [String] {
            var unmet: [String] = []
            if request.requiresExternalPower && power != .plugged { unmet.append("external power") }
            if request.requiresNetworkConnectivity && network != .online { unmet.append("network connectivity") }
            return unmet
        }
    }

    /// Why a submission is refused, as BGTaskScheduler.Error codes.
    package enum Refusal: Error, Equatable {
        case tooManyPending(limit: Int)
    }

    package var version = 1
    /// How far `advance` has moved the scheduler's clock ahead of the wall clock, in seconds.
    package var clockOffset: Double = 0
    /// By bundle identifier.
    package var apps: [String: AppEntry] = [:]

    package init() {}

    /// Adds a request, replacing a pending one with the same identifier.
    package mutating func submit(
        _ request: WireTaskRequest, for app: String, maximumRefresh: Int, maximumProcessing: Int
    ) throws(Refusal) {
        var entry = apps[app] ?? AppEntry()
        let others = entry.requests.filter { $0.identifier != request.identifier }
        let limit = request.kind == .appRefresh ? maximumRefresh : maximumProcessing
        guard others.filter({ $0.kind == request.kind }).count < limit else { throw .tooManyPending(limit: limit) }
        entry.requests = others + [request]
        entry.taskKinds[request.identifier] = request.kind
        apps[app] = entry
    }

    /// Removes the request with this identifier, or every request of the app (nil); returns
    /// the identifiers removed.
    @discardableResult
    package mutating func cancel(_ identifier: String?, for app: String) -> [String] {
        guard var entry = apps[app] else { return [] }
        let removed = entry.requests.filter { identifier == nil || $0.identifier == identifier }.map(\.identifier)
        entry.requests.removeAll { identifier == nil || $0.identifier == identifier }
        set(entry, for: app)
        return removed
    }

    /// Sets an app's fetch interval; the next fetch is due one interval (at least `floor`) from now.
    package mutating func setFetchInterval(_ interval: Double?, for app: String, now: Double, floor: Double) {
        var entry = apps[app] ?? AppEntry()
        entry.fetchInterval = interval
        entry.nextFetch = interval.map { now + max($0, floor) }
        set(entry, for: app)
    }

    package mutating func setForceQuit(_ forceQuit: Bool, for app: String) {
        var entry = apps[app] ?? AppEntry()
        entry.forceQuit = forceQuit
        set(entry, for: app)
    }

    /// Records that the task `identifier` began at `now` (the scheduler ran it, or `run-task`).
    package mutating func ran(_ identifier: String, for app: String, at now: Double) {
        var entry = apps[app] ?? AppEntry()
        entry.lastRuns = (entry.lastRuns ?? [:]).merging([identifier: now]) { $1 }
        set(entry, for: app)
    }

    /// Takes the app's requests that are due at `now` and whose conditions hold, oldest first,
    /// and whether its fetch is due (moving the next one an interval on). A request whose
    /// identifier's task is still `running` waits for it to end: one task per identifier at a
    /// time; one whose identifier ran less than `minimumInterval` ago waits for the interval.
    package mutating func takeDue(
        for app: String, now: Double, conditions: Conditions, refreshAvailable: Bool, fetchFloor: Double,
        running: Set<String> = [], minimumInterval: (WireTaskRequest.Kind) -> Double = { _ in 0 }
    ) -> (fetch: Bool, tasks: [WireTaskRequest]) {
        guard var entry = apps[app], !entry.forceQuit else { return (false, []) }
        var fetch = false
        if refreshAvailable, let interval = entry.fetchInterval, let next = entry.nextFetch, next <= now {
            fetch = true
            entry.nextFetch = now + max(interval, fetchFloor)
        }
        let due = entry.requests.filter { request in
            !running.contains(request.identifier)
                && entry.notBefore(request, minimumInterval: minimumInterval) <= now && conditions.unmet(by: request).isEmpty
                && (request.kind == .processing || refreshAvailable)
        }
        entry.requests.removeAll { request in due.contains { $0.identifier == request.identifier } }
        for request in due { entry.lastRuns = (entry.lastRuns ?? [:]).merging([request.identifier: now]) { $1 } }
        if !due.isEmpty { entry.taken = (entry.taken ?? []).filter { old in !due.contains { $0.identifier == old.identifier } } + due }
        set(entry, for: app)
        return (fetch, due)
    }

    /// The app began the task `identifier` (its launch handler was called): its request is
    /// spent. Returns whether one was taken.
    @discardableResult
    package mutating func began(_ identifier: String, for app: String) -> Bool {
        guard var entry = apps[app], let index = entry.taken?.firstIndex(where: { $0.identifier == identifier }) else { return false }
        entry.taken?.remove(at: index)
        if entry.taken?.isEmpty == true { entry.taken = nil }
        set(entry, for: app)
        return true
    }

    /// The app's process ended with tasks taken for it and not begun (it died launching): spent
    /// with it, as iOS does not run again what it gave an app that then crashed.
    package mutating func dropTaken(for app: String) -> [String] {
        guard var entry = apps[app], let taken = entry.taken, !taken.isEmpty else { return [] }
        entry.taken = nil
        set(entry, for: app)
        return taken.map(\.identifier)
    }

    /// At a host's start: the requests an earlier host took and whose tasks no app began (it
    /// ended, or was killed, in between) are pending again, unless the app has submitted the
    /// identifier anew since. Returns them, by app.
    package mutating func returnTaken() -> [(app: String, identifiers: [String])] {
        var returned: [(app: String, identifiers: [String])] = []
        for app in apps.keys.sorted() {
            guard var entry = apps[app], let taken = entry.taken, !taken.isEmpty else { continue }
            let back = taken.filter { request in !entry.requests.contains { $0.identifier == request.identifier } }
            entry.requests = back + entry.requests
            entry.taken = nil
            set(entry, for: app)
            if !back.isEmpty { returned.append((app, back.map(\.identifier))) }
        }
        return returned
    }

    /// The earliest time after `now` at which something of these apps becomes due, counting only
    /// requests whose conditions hold now (a change of conditions is an event of its own).
    package func nextDate(
        after now: Double, apps names: [String], conditions: Conditions, refreshAvailable: Bool,
        minimumInterval: (WireTaskRequest.Kind) -> Double = { _ in 0 }
    ) -> Double? {
        var earliest: Double?
        for name in names {
            guard let entry = apps[name], !entry.forceQuit else { continue }
            var dates = entry.requests
                .filter { conditions.unmet(by: $0).isEmpty && ($0.kind == .processing || refreshAvailable) }
                .map { entry.notBefore($0, minimumInterval: minimumInterval) }
            if refreshAvailable, entry.fetchInterval != nil, let next = entry.nextFetch { dates.append(next) }
            for date in dates where date > now { earliest = min(earliest ?? date, date) }
        }
        return earliest
    }

    private mutating func set(_ entry: AppEntry, for app: String) {
        apps[app] = entry.isEmpty ? nil : entry
    }
}

/// The scheduler's file, STATE/background-tasks.json, a `StateStore`: written whole and
/// durably, off the host's loop; an unreadable one is kept aside and named in a warning.
package struct ScheduleStore: Sendable {
    package let store: StateStore<BackgroundSchedule>

    package init(stateDirectory: URL, stepObserver: (@Sendable (String) -> Void)? = nil) {
        store = StateStore(
            json: stateDirectory.appendingPathComponent("background-tasks.json").path, what: "the scheduler's store",
            readable: true, stepObserver: stepObserver)
    }

    package var url: URL { URL(fileURLWithPath: store.file.path) }

    /// Reads the store: a missing file is an empty schedule.
    package func load() -> (schedule: BackgroundSchedule, warning: String?) {
        let (value, warning) = store.load()
        return (value ?? BackgroundSchedule(), warning.map { $0 + " (no pending requests)" })
    }

    /// Replaces the store with `schedule` now, on the caller's thread.
    package func save(_ schedule: BackgroundSchedule) throws {
        try store.saveNow(schedule)
    }
}
