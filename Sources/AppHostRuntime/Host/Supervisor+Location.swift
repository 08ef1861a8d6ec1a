import Foundation
import Dispatch
import AppHostProtocol

// Location (README.md, "Continuous background modes"): the simulated device's position (set,
// a GPX route replayed on the host's clock, clear), each app's authorization (a setting of the
// host, kept in the state directory), and who receives updates: an app whose location manager
// updates, authorized, in the foreground — and in the background only with the location mode
// and allowsBackgroundLocationUpdates, which then holds it running (the machine's `holds`).
// Significant-change monitoring wakes a suspended app, or relaunches a terminated one that the
// user did not force quit, after a move of `significantChangeDistance` metres.

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

extension Supervisor {
    // MARK: Commands

    /// Sets the device's position (`location set LAT,LON`); a route being replayed stops.
    public func setLocation(_ coordinate: Coordinate) -> String {
        queue.sync {
            location.set(coordinate)
            timers.set(.route, at: nil)
            let line = "the device is at \(coordinate)"
            publish(HostEvent(time: Date(), event: .location, detail: line), run: nil)
            deliverMove(to: coordinate)
            return line
        }
    }

    /// Replays a GPX route (`location route FILE.gpx [--speed M/S]`): the device moves along it on
    /// the host's clock, and updates reach apps every `locationUpdateInterval`.
    public func replayRoute(_ route: LocationRoute, name: String) -> String {
        queue.sync {
            let start = location.replay(route, name: name, now: clock.now)
            let line = "replaying \(name): \(route.points.count) points over \(String(format: "%.1f", route.duration)) s"
            publish(HostEvent(time: Date(), event: .location, detail: line), run: nil)
            // At its start now, then every interval until its end.
            deliverMove(to: start)
            timers.set(.route, at: clock.now + configuration.policy.locationUpdateInterval)
            return line
        }
    }

    /// Clears the simulated position (`location clear`): no updates until one is set again.
    public func clearLocation() -> String {
        queue.sync {
            location.set(nil)
            timers.set(.route, at: nil)
            let line = "the device's position is cleared"
            publish(HostEvent(time: Date(), event: .location, detail: line), run: nil)
            return line
        }
    }

    /// Sets APP's location authorization (`authorize APP location always|whenInUse|denied`),
    /// kept in the state directory; a running app is told once it is kept.
    public func authorizeLocation(_ name: String, _ authorization: LocationAuthorization) async throws -> String {
        let record = try queue.sync { try app(named: name) }
        // The app is told, and the command answered, once the authorization is on the disk (a
        // host killed after saying so keeps it); nothing waits for the write meanwhile.
        await withCheckedContinuation { (saved: CheckedContinuation<Void, Never>) in
            queue.async { [self] in location.authorize(record.bundle.identifier, authorization) { saved.resume() } }
        }
        queue.sync {
            guard let run = record.run, run.machine.isLive, location.authorization(of: record.bundle.identifier) == authorization else { return }
            send(.locationAuthorization(authorization.wireName), record, run)
            publish(HostEvent(
                time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid, event: .location,
                state: currentState(of: record), detail: "authorization \(authorization.rawValue)"), run: run)
            if authorization == .denied && run.location.updating { send(.locationFailed(code: 1), record, run) }
            updateLocationHold(record, run)
            if let position = location.position { deliver(position, to: record, run) }
        }
        return "\(record.bundle.name): location authorization \(authorization.rawValue)"
    }

    // MARK: The app's requests

    /// The app's location managers changed what they ask for.
    func receiveLocationManager(_ request: LocationRequest, _ record: AppRecord, _ run: AppRun) {
        let before = run.location
        run.location = request
        let authorization = location.authorization(of: record.bundle.identifier)
        if request.significant != before.significant { location.monitorSignificantChanges(record.id, request.significant) }
        var parts = [request.updating ? "updating" : "not updating"]
        if request.background { parts.append("in the background too") }
        if request.significant { parts.append("monitoring significant changes") }
        parts.append("authorization \(authorization?.rawValue ?? "notDetermined")")
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid, event: .location,
            state: currentState(of: record), detail: parts.joined(separator: ", ")), run: run)
        if request.updating && !before.updating && authorization == .denied {
            send(.locationFailed(code: 1), record, run)
        }
        updateLocationHold(record, run)
        if request.updating && !before.updating, let position = location.position { deliver(position, to: record, run) }
    }

    func receiveAuthorizationRequest(always: Bool, _ record: AppRecord, _ run: AppRun) {
        let current = location.authorization(of: record.bundle.identifier)
        let detail = "asked for \(always ? "always" : "whenInUse") authorization; it is \(current?.rawValue ?? "notDetermined")"
            + (current == nil ? " (answer with authorize \(record.bundle.name) location always|whenInUse|denied)" : "")
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid, event: .location,
            state: currentState(of: record), detail: detail), run: run)
    }

    // MARK: Delivering

    /// Whether the app's updates continue in the background: it updates, allows background
    /// updates and is authorized. The machine holds it only with the location mode declared.
    func updateLocationHold(_ record: AppRecord, _ run: AppRun) {
        let background = run.location.updating && run.location.background && location.isAuthorized(record.bundle.identifier)
        guard background != run.machine.updatesLocationInBackground else { return }
        handle(record, run, .backgroundLocation(background, why: background ? "updates continue in the background" : "updates stop in the background"))
    }

    /// Whether the app receives standard updates now: it updates, is authorized, runs, and is in
    /// the foreground or held in the background by its location updates.
    func receivesUpdates(_ record: AppRecord, _ run: AppRun) -> Bool {
        guard run.location.updating, location.isAuthorized(record.bundle.identifier), run.machine.isLive, run.machine.launchFinished
        else { return false }
        switch run.machine.phase {
        case .suspending, .suspended: return false
        default: return run.machine.isInForeground || run.machine.holds.contains(.location)
        }
    }

    func deliver(_ position: Coordinate, to record: AppRecord, _ run: AppRun) {
        guard receivesUpdates(record, run) else { return }
        send(.location(wire(position)), record, run)
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid, event: .location,
            state: currentState(of: record), detail: "delivered \(position)"), run: run)
    }

    func wire(_ position: Coordinate) -> WireLocation {
        WireLocation(latitude: position.latitude, longitude: position.longitude, timestamp: Date().timeIntervalSince1970)
    }

    /// The device moved: updates to the apps that receive them, then significant changes.
    func deliverMove(to position: Coordinate) {
        for record in apps {
            if let run = record.run { deliver(position, to: record, run) }
            significantChange(position, record)
        }
    }

    /// A move far enough from the app's last significant position wakes it (or relaunches it)
    /// for `locationManager(_:didUpdateLocations:)`, if it monitors and is authorized always.
    func significantChange(_ position: Coordinate, _ record: AppRecord) {
        guard location.isSignificantChange(to: position, for: record.id, identifier: record.bundle.identifier) else { return }
        if let run = record.run, run.machine.isAlive {
            if receivesUpdates(record, run) { return }  // it has this position already
            switch run.machine.phase {
            case .suspended, .suspending: break
            default:
                if run.machine.isLive, run.machine.launchFinished { send(.location(wire(position)), record, run) }
                return
            }
        }
        guard !scheduler.isForceQuit(record.bundle.identifier), !waiters.isShuttingDown else { return }
        let payload = String(decoding: WireCoding.encode(wire(position)), as: UTF8.self)
        let how = deliver(BackgroundEvent(kind: .significantLocationChange, payload: payload), reason: "location", to: record)
        announce(record, command: .location, "significant location change to \(position)", how)
    }

    /// A route's step: the device moves to where the route has it now.
    func stepRoute() {
        guard let (position, finished) = location.step(now: clock.now) else { return }
        deliverMove(to: position)
        timers.set(.route, at: location.isReplaying ? clock.now + configuration.policy.locationUpdateInterval : nil)
        if let finished { publish(HostEvent(time: Date(), event: .location, detail: finished), run: nil) }
    }
}
