/// The simulated device's location (README.md, "Continuous background modes" and "How the code
/// is laid out"): its position, the GPX route that moves it on the host's clock, each app's
/// authorization (a setting of the host, kept in its store), and which apps monitor significant
/// changes and where they last heard of one. It decides what a move means; the host delivers.
/// Touched only on the host's loop.
final class LocationSimulator {
    /// A move of this many metres or more from the last significant position is a significant change.
    static let significantChangeDistance = 500.0

    private(set) var position: Coordinate?
    private var route: (route: LocationRoute, name: String, startedAt: HostInstant)?
    private var authorizations: [String: LocationAuthorization]
    /// The apps that monitor significant changes (kept past their process, so that a change
    /// relaunches them), and the position each last heard of one at (nil: none yet).
    private var monitoring: [AppID: Coordinate?] = [:]
    private let store: StateStore<[String: LocationAuthorization]>

    /// Loads the authorizations; the warning says what was wrong with the store, if anything.
    init(store: StateStore<[String: LocationAuthorization]>) {
        self.store = store
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

    // MARK: The device

    /// Sets the position (a route being replayed stops), or clears it.
    func set(_ position: Coordinate?) {
        route = nil
        self.position = position
    }

    /// Starts replaying `route` at `now`, from its first point; returns that point.
    func replay(_ route: LocationRoute, name: String, now: HostInstant) -> Coordinate {
        self.route = (route, name, now)
        position = route.points[0]
        return route.points[0]
    }

    var isReplaying: Bool { route != nil }

    /// The route's step at `now`: where the device is, and the route's name if it has ended.
    func step(now: HostInstant) -> (position: Coordinate, finished: String?)? {
        guard let active = route else { return nil }
        let elapsed = active.startedAt.duration(to: now).seconds
        position = active.route.position(after: elapsed)
        guard elapsed >= active.route.duration else { return (position!, nil) }
        route = nil
        return (position!, "\(active.name) finished at \(active.route.points.last!)")
    }

    // MARK: Significant changes

    /// The app starts (or stops) monitoring significant changes, from the device's position now.
    func monitorSignificantChanges(_ app: AppID, _ on: Bool) {
        monitoring[app] = on ? .some(position) : nil
    }

    func monitorsSignificantChanges(_ app: AppID) -> Bool { monitoring[app] != nil }

    /// Whether the move to `position` is a significant change for the app: it monitors, is
    /// authorized always, and is `significantChangeDistance` or more from where it last heard of
    /// one (or has heard of none). If so, this is where it last heard of one now.
    func isSignificantChange(to position: Coordinate, for app: AppID, identifier: String) -> Bool {
        guard let last = monitoring[app], authorizations[identifier] == .always else { return false }
        if let last, last.distance(to: position) < Self.significantChangeDistance { return false }
        monitoring[app] = .some(position)
        return true
    }
}
