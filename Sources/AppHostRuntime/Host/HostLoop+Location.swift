import Foundation
import Dispatch
import AppHostProtocol

// Location (docs/continuous-modes.md, "Continuous background modes"): the simulated device's position (set,
// a GPX route replayed on the host's clock, clear), each app's authorization (a setting of the
// host, kept in the state directory), and who receives updates: an app whose location manager
// updates, authorized, in the foreground — and in the background only with the location mode
// and allowsBackgroundLocationUpdates, which then holds it running (the machine's `holds`).
// Significant-change monitoring wakes a suspended app, or relaunches a terminated one that the
// user did not force quit, after a move of `significantChangeDistance` metres. LocationSimulator
// decides all of it; this gives it the apps as it needs them and performs what it says.

extension HostLoop {
    // MARK: Commands

    /// Sets the device's position (`location set LAT,LON`); a route being replayed stops.
    func setLocation(_ coordinate: Coordinate) -> String {
        queue.sync {
            let (line, effects) = location.set(coordinate, apps: apps.map(locationFacts))
            perform(effects)
            return line
        }
    }

    /// Replays a GPX route (`location route FILE.gpx [--speed M/S]`): the device moves along it on
    /// the host's clock, and updates reach apps every `locationUpdateInterval`.
    func replayRoute(_ route: LocationRoute, name: String) -> String {
        queue.sync {
            let (line, effects) = location.replay(route, name: name, now: clock.now, apps: apps.map(locationFacts))
            perform(effects)
            return line
        }
    }

    /// Clears the simulated position (`location clear`): no updates until one is set again.
    func clearLocation() -> String {
        queue.sync {
            let (line, effects) = location.clear()
            perform(effects)
            return line
        }
    }

    /// Sets APP's location authorization (`authorize APP location always|whenInUse|denied`),
    /// kept in the state directory; a running app is told once it is kept.
    func authorizeLocation(_ name: String, _ authorization: LocationAuthorization) async throws -> String {
        let record = try queue.sync { try app(named: name) }
        // The app is told, and the command answered, once the authorization is on the disk (a
        // host killed after saying so keeps it); nothing waits for the write meanwhile.
        await withCheckedContinuation { (saved: CheckedContinuation<Void, Never>) in
            queue.async { [self] in location.authorize(record.bundle.identifier, authorization) { saved.resume() } }
        }
        queue.sync { perform(location.authorizationKept(authorization, for: locationFacts(record))) }
        return "\(record.bundle.name): location authorization \(authorization.rawValue)"
    }

    // MARK: The app's requests

    /// The app's location managers changed what they ask for.
    func receiveLocationManager(_ request: LocationRequest, _ record: AppRecord) {
        perform(location.receive(request, from: locationFacts(record)))
    }

    func receiveAuthorizationRequest(always: Bool, _ record: AppRecord) {
        perform(location.authorizationAsked(always: always, by: locationFacts(record), name: record.bundle.name))
    }

    /// A route's step is due.
    func stepRoute() {
        perform(location.step(now: clock.now, apps: apps.map(locationFacts)))
    }

    // MARK: Routing

    /// What the location rules need to know of the app now.
    private func locationFacts(_ record: AppRecord) -> LocationSimulator.App {
        var facts = LocationSimulator.App(
            id: record.id, identifier: record.bundle.identifier, run: record.run?.id,
            mayWake: !scheduler.isForceQuit(record.bundle.identifier) && !waiters.isShuttingDown)
        if let machine = record.run?.machine {
            facts.isAlive = machine.isAlive
            facts.isLive = machine.isLive
            facts.launchFinished = machine.launchFinished
            facts.isSuspended = machine.isSuspendedOrSuspending
            facts.isInForeground = machine.isInForeground
            facts.heldByLocation = machine.holds.contains(.location)
            facts.updatesInBackground = machine.updatesLocationInBackground
        }
        return facts
    }

    /// Performs the location simulator's effects, in order.
    private func perform(_ effects: [LocationSimulator.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let id, let message):
                let record = apps[id]
                guard let run = record.run else { continue }
                switch message {
                case .position(let position): send(.location(wire(position)), record, run)
                case .denied: send(.locationFailed(code: 1), record, run)
                case .authorization(let authorization): send(.locationAuthorization(authorization.wireName), record, run)
                }
            case .event(nil, let detail):
                publish(HostEvent(time: Date(), event: .location, detail: detail), run: nil)
            case .event(let id?, let detail):
                let record = apps[id]
                publish(HostEvent(
                    time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: record.run?.process?.pid, event: .location,
                    state: currentState(of: record), detail: detail), run: record.run)
            case .hold(let id, let on, let why):
                let record = apps[id]
                if let run = record.run { handle(record, run, .backgroundLocation(on, why: why)) }
            case .wake(let id, let position):
                let record = apps[id]
                let payload = String(decoding: WireCoding.encode(wire(position)), as: UTF8.self)
                let how = deliver(BackgroundEvent(kind: .significantLocationChange, payload: payload), to: record)
                announce(record, command: .location, "significant location change to \(position)", how)
            case .routeDeadline(let deadline):
                timers.set(.route, at: deadline)
            case .deliverCurrent(let id):
                perform(location.current(for: locationFacts(apps[id])))
            }
        }
    }

    private func wire(_ position: Coordinate) -> WireLocation {
        WireLocation(latitude: position.latitude, longitude: position.longitude, timestamp: Date().timeIntervalSince1970)
    }
}
