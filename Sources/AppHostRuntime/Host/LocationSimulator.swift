import AppHostProtocol
import Foundation

/// The simulated device's location (docs/continuous-modes.md, "Continuous background modes" and "How the code
/// is laid out"): its position, the GPX route that moves it on the host's clock, each app's
/// authorization (a setting of the host, kept in its store), what each app's location managers
/// ask for in its run, and which apps monitor significant changes and where they last heard of
/// one. It decides what a move, a request or an authorization means, as effects the host
/// performs (HostLoop+Location.swift); it never reaches an app itself. Touched only on the
/// host's loop.
final class LocationSimulator {
    /// A move of this many metres or more from the last significant position is a significant change.
    static let significantChangeDistance = 500.0

    /// What the rules need to know of an installed app, as the host sees it now.
    struct App: Equatable {
        var id: AppID
        var identifier: String
        /// Its run (alive or ended), if it has had one.
        var run: RunID?
        /// Its process runs (it may be ending).
        var isAlive = false
        /// It runs and is not ending.
        var isLive = false
        /// Its launch's callbacks have returned.
        var launchFinished = false
        /// It is suspended or being suspended.
        var isSuspended = false
        var isInForeground = false
        /// The location mode holds it running (the machine's `holds`).
        var heldByLocation = false
        /// The machine's `updatesLocationInBackground`, as the last `hold` effect set it.
        var updatesInBackground = false
        /// It may be woken or relaunched in the background: the user did not force quit it and
        /// the host is not shutting down.
        var mayWake = true
    }

    /// What the host tells an app.
    enum Message: Equatable {
        /// `locationManager(_:didUpdateLocations:)` with this position.
        case position(Coordinate)
        /// `locationManager(_:didFailWithError:)`, kCLErrorDenied.
        case denied
        /// Its authorization changed (`locationManagerDidChangeAuthorization`).
        case authorization(LocationAuthorization)
    }

    /// What the host does for a decision, in order.
    enum Effect: Equatable {
        /// Tell the app's run.
        case send(AppID, Message)
        /// A `location` event of the app, or of the host (nil).
        case event(AppID?, String)
        /// The app's updates continue in the background or stop there: the machine's
        /// `.backgroundLocation` input, which holds it running with the location mode.
        case hold(AppID, Bool, why: String)
        /// A significant change wakes (or relaunches) the app in the background with this position.
        case wake(AppID, Coordinate)
        /// The route's next step is due then (nil: none).
        case routeDeadline(HostInstant?)
        /// Ask `current(for:)` of the app again once the effects before it are performed (a hold
        /// changes whether it receives updates).
        case deliverCurrent(AppID)
    }

    private var position: Coordinate?
    private var route: (route: LocationRoute, name: String, startedAt: HostInstant)?
    private var authorizations: [String: LocationAuthorization]
    /// What each app's location managers ask for in its latest run (a new run asks afresh).
    private var requests: [AppID: (run: RunID, request: LocationRequest)] = [:]
    /// The apps that monitor significant changes (kept past their process, so that a change
    /// relaunches them), and the position each last heard of one at (nil: none yet).
    private var monitoring: [AppID: Coordinate?] = [:]
    private let store: StateStore<[String: LocationAuthorization]>
    /// How often a route's updates reach the apps.
    private let updateInterval: Duration

    /// Loads the authorizations; the warning says what was wrong with the store, if anything.
    init(store: StateStore<[String: LocationAuthorization]>, updateInterval: Duration) {
        self.store = store
        self.updateInterval = updateInterval
        let (loaded, warning) = store.load()
        authorizations = loaded ?? [:]
        loadWarning = warning
    }

    let loadWarning: String?

    // MARK: Authorization

    func authorization(of app: String) -> LocationAuthorization? { authorizations[app] }

    /// Whether the app may receive updates: authorized, and not denied.
    func isAuthorized(_ app: String) -> Bool { authorizations[app].map { $0 != .denied } ?? false }

    /// Sets the app's authorization; `kept` runs (on the writer's thread) once it is on the disk.
    func authorize(_ app: String, _ authorization: LocationAuthorization, kept: @escaping @Sendable () -> Void) {
        authorizations[app] = authorization
        store.save(authorizations, then: kept)
    }

    /// The app's authorization `authorization`, set by the host, is on the disk: a running app is
    /// told, fails its updates if denied, and has its background updates reconsidered; then it
    /// receives the position if it now may. Nothing if it does not run or the setting changed
    /// meanwhile.
    func authorizationKept(_ authorization: LocationAuthorization, for app: App) -> [Effect] {
        guard app.isLive, authorizations[app.identifier] == authorization else { return [] }
        var effects: [Effect] = [.send(app.id, .authorization(authorization)), .event(app.id, "authorization \(authorization.rawValue)")]
        if authorization == .denied && request(of: app).updating { effects.append(.send(app.id, .denied)) }
        effects += hold(app)
        if position != nil { effects.append(.deliverCurrent(app.id)) }
        return effects
    }

    /// The app asked for authorization: what it is, and how to answer if it is not determined.
    func authorizationAsked(always: Bool, by app: App, name: String) -> [Effect] {
        let current = authorizations[app.identifier]
        return [.event(app.id, "asked for \(always ? "always" : "whenInUse") authorization; it is \(current?.rawValue ?? "notDetermined")"
            + (current == nil ? " (answer with authorize \(name) location always|whenInUse|denied)" : ""))]
    }

    // MARK: The app's requests

    /// What the app's location managers ask for in its run (nothing: a run that has not asked).
    func request(of app: App) -> LocationRequest {
        guard let run = app.run, let asked = requests[app.id], asked.run == run else { return LocationRequest() }
        return asked.request
    }

    /// The app's location managers changed what they ask for: significant changes are monitored
    /// from the position now, updates without authorization fail, its background updates are
    /// reconsidered, and updates that begin receive the position.
    func receive(_ request: LocationRequest, from app: App) -> [Effect] {
        guard let run = app.run else { return [] }
        let before = self.request(of: app)
        requests[app.id] = (run, request)
        let authorization = authorizations[app.identifier]
        if request.significant != before.significant { monitoring[app.id] = request.significant ? .some(position) : nil }
        var parts = [request.updating ? "updating" : "not updating"]
        if request.background { parts.append("in the background too") }
        if request.significant { parts.append("monitoring significant changes") }
        parts.append("authorization \(authorization?.rawValue ?? "notDetermined")")
        var effects: [Effect] = [.event(app.id, parts.joined(separator: ", "))]
        let begins = request.updating && !before.updating
        if begins && authorization == .denied { effects.append(.send(app.id, .denied)) }
        effects += hold(app)
        if begins && position != nil { effects.append(.deliverCurrent(app.id)) }
        return effects
    }

    func monitorsSignificantChanges(_ app: AppID) -> Bool { monitoring[app] != nil }

    // MARK: The device

    /// Sets the device's position (a route being replayed stops) and tells the apps that hear of
    /// the move; `line` says it.
    func set(_ position: Coordinate, apps: [App]) -> (line: String, effects: [Effect]) {
        route = nil
        self.position = position
        let line = "the device is at \(position)"
        return (line, [.routeDeadline(nil), .event(nil, line)] + move(to: position, apps))
    }

    /// Clears the position: no updates until one is set again.
    func clear() -> (line: String, effects: [Effect]) {
        route = nil
        position = nil
        let line = "the device's position is cleared"
        return (line, [.routeDeadline(nil), .event(nil, line)])
    }

    /// Starts replaying `route` at `now` from its first point: the apps hear of it now, and then
    /// every `updateInterval` until its end.
    func replay(_ route: LocationRoute, name: String, now: HostInstant, apps: [App]) -> (line: String, effects: [Effect]) {
        self.route = (route, name, now)
        position = route.points[0]
        let line = "replaying \(name): \(route.points.count) points over \(String(format: "%.1f", route.duration)) s"
        return (line, [.event(nil, line)] + move(to: route.points[0], apps) + [.routeDeadline(now + updateInterval)])
    }

    var isReplaying: Bool { route != nil }

    /// The route's step at `now`: the device moves to where the route has it, the apps hear of
    /// it, and the next step is due an interval later unless the route has ended.
    func step(now: HostInstant, apps: [App]) -> [Effect] {
        guard let active = route else { return [] }
        let elapsed = active.startedAt.duration(to: now).seconds
        let reached = active.route.position(after: elapsed)
        position = reached
        let ended = elapsed >= active.route.duration
        if ended { route = nil }
        var effects = move(to: reached, apps) + [.routeDeadline(ended ? nil : now + updateInterval)]
        if ended { effects.append(.event(nil, "\(active.name) finished at \(active.route.points.last!)")) }
        return effects
    }

    /// The position for the app now, if it receives updates and there is one.
    func current(for app: App) -> [Effect] {
        guard let position, receivesUpdates(app) else { return [] }
        return [.send(app.id, .position(position)), .event(app.id, "delivered \(position)")]
    }

    // MARK: Rules

    /// Whether the app's updates continue in the background: it updates, allows background
    /// updates and is authorized. The machine holds it only with the location mode declared.
    private func hold(_ app: App) -> [Effect] {
        let asked = request(of: app)
        let background = asked.updating && asked.background && isAuthorized(app.identifier)
        guard background != app.updatesInBackground else { return [] }
        return [.hold(app.id, background, why: background ? "updates continue in the background" : "updates stop in the background")]
    }

    /// Whether the app receives standard updates now: it updates, is authorized, runs, and is in
    /// the foreground or held in the background by its location updates.
    private func receivesUpdates(_ app: App) -> Bool {
        guard request(of: app).updating, isAuthorized(app.identifier), app.isLive, app.launchFinished, !app.isSuspended
        else { return false }
        return app.isInForeground || app.heldByLocation
    }

    /// The device moved: each app that receives updates hears of it, then each that monitors
    /// significant changes and is `significantChangeDistance` from where it last heard of one.
    private func move(to position: Coordinate, _ apps: [App]) -> [Effect] {
        apps.flatMap { app in current(for: app) + significantChange(to: position, app) }
    }

    /// A significant change reaches an app that did not receive the position as an update: a
    /// running one at once, a suspended (or ended) one woken or relaunched in the background for
    /// `locationManager(_:didUpdateLocations:)` — unless the user force quit it.
    private func significantChange(to position: Coordinate, _ app: App) -> [Effect] {
        guard isSignificantChange(to: position, for: app) else { return [] }
        if app.isAlive {
            if receivesUpdates(app) { return [] }  // it has this position already
            if !app.isSuspended { return app.isLive && app.launchFinished ? [.send(app.id, .position(position))] : [] }
        }
        return app.mayWake ? [.wake(app.id, position)] : []
    }

    /// Whether the move to `position` is a significant change for the app: it monitors, is
    /// authorized always, and is `significantChangeDistance` or more from where it last heard of
    /// one (or has heard of none). If so, this is where it last heard of one now.
    private func isSignificantChange(to position: Coordinate, for app: App) -> Bool {
        guard let last = monitoring[app.id], authorizations[app.identifier] == .always else { return false }
        if let last, last.distance(to: position) < Self.significantChangeDistance { return false }
        monitoring[app.id] = .some(position)
        return true
    }
}

/// An app's location authorization, a setting of the host (`authorize APP location …`).
public enum LocationAuthorization: String, Sendable, Codable, CaseIterable {
    case always
    case whenInUse
    case denied

    /// `CLAuthorizationStatus`'s name, as the SDK reads it.
    var wireName: String {
        switch self {
        case .always: "authorizedAlways"
        case .whenInUse: "authorizedWhenInUse"
        case .denied: "denied"
        }
    }
}

/// What an app's location managers ask for (AppMessage.locationManager), for one run.
struct LocationRequest: Equatable {
    var updating = false
    var background = false
    var significant = false
}
