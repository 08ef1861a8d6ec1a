import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// The simulated device's location (LocationSimulator) on its own, on a virtual clock: the
/// significant-change distance and who hears of a change, who receives a move, the background
/// hold, a route's steps and deadlines, authorizations.
@Suite struct LocationSimulatorTests {
    private let files = TemporaryFiles()
    private let start = HostInstant(nanoseconds: 1_000_000_000)
    private let interval: Duration = .seconds(1)
    private let identifier = "com.example.run"
    private let id = AppID(index: 0)

    private func simulator(_ path: String? = nil) throws -> LocationSimulator {
        LocationSimulator(
            store: StateStore(json: try path ?? files.url("location-\(UUID().uuidString).json").path, what: "the location authorizations"),
            updateInterval: interval)
    }

    /// Metres north of 48.85 N, 2.35 E.
    private func north(_ metres: Double) -> Coordinate {
        Coordinate(latitude: 48.85 + metres / 111_195, longitude: 2.35)
    }

    /// The app in its first run: live, launched, in the foreground unless told otherwise.
    private func running(_ change: (inout LocationSimulator.App) -> Void = { _ in }) -> LocationSimulator.App {
        var app = LocationSimulator.App(
            id: id, identifier: identifier, run: RunID(app: id, launch: 0), isAlive: true, isLive: true, launchFinished: true,
            isInForeground: true)
        change(&app)
        return app
    }

    private func suspended() -> LocationSimulator.App {
        running { $0.isSuspended = true; $0.isInForeground = false }
    }

    /// Authorizes the app (the store's write is not waited for).
    private func authorize(_ location: LocationSimulator, _ authorization: LocationAuthorization) {
        location.authorize(identifier, authorization) {}
    }

    /// The effects of moving the device to `position` with these apps.
    private func move(_ location: LocationSimulator, _ position: Coordinate, _ apps: [LocationSimulator.App]) -> [LocationSimulator.Effect] {
        Array(location.set(position, apps: apps).effects.dropFirst(2))
    }

    @Test func aSignificantChangeIs500MetresFromTheLastOne() throws {
        let location = try simulator()
        _ = location.set(north(0), apps: [])
        authorize(location, .always)
        _ = location.receive(LocationRequest(significant: true), from: running())
        #expect(location.monitorsSignificantChanges(id))
        #expect(move(location, north(499), [suspended()]).isEmpty)
        #expect(move(location, north(501), [suspended()]) == [.wake(id, north(501))])
        // Measured from where the last one was, not from the start.
        #expect(move(location, north(900), [suspended()]).isEmpty)
        #expect(move(location, north(1002), [suspended()]) == [.wake(id, north(1002))])
    }

    @Test func onlyAnAppAuthorizedAlwaysThatMonitorsHearsOfOne() throws {
        let location = try simulator()
        _ = location.set(north(0), apps: [])
        _ = location.receive(LocationRequest(significant: true), from: running())
        #expect(move(location, north(1000), [suspended()]).isEmpty, "not determined")
        authorize(location, .whenInUse)
        #expect(move(location, north(2000), [suspended()]).isEmpty, "when in use")
        authorize(location, .always)
        _ = location.receive(LocationRequest(), from: running())
        #expect(!location.monitorsSignificantChanges(id))
        #expect(move(location, north(3000), [suspended()]).isEmpty, "not monitoring")
        // With no position when it began, the first move is one.
        _ = location.clear()
        _ = location.receive(LocationRequest(significant: true), from: running())
        #expect(move(location, north(3000), [suspended()]) == [.wake(id, north(3000))])
    }

    @Test func aSignificantChangeReachesARunningAppAtOnceAndNotAForceQuitOne() throws {
        let location = try simulator()
        authorize(location, .always)
        _ = location.receive(LocationRequest(significant: true), from: running())
        let background = running { $0.isInForeground = false }
        #expect(move(location, north(0), [background]) == [.send(id, .position(north(0)))], "running in the background: told, not woken")
        #expect(move(location, north(1000), [running { $0.launchFinished = false }]).isEmpty, "still launching: nothing")
        var ended = running()
        ended.isAlive = false
        ended.isLive = false
        ended.mayWake = false
        #expect(move(location, north(2000), [ended]).isEmpty, "force quit: not relaunched")
        ended.mayWake = true
        #expect(move(location, north(3000), [ended]) == [.wake(id, north(3000))], "ended: relaunched")
        // An app that receives updates has the position already.
        _ = location.receive(LocationRequest(updating: true, significant: true), from: running())
        #expect(move(location, north(4000), [running()]) == [.send(id, .position(north(4000))), .event(id, "delivered \(north(4000))")])
    }

    @Test func aMoveReachesAnAuthorizedUpdatingAppInTheForegroundOrHeldInTheBackground() throws {
        let location = try simulator()
        _ = location.receive(LocationRequest(updating: true), from: running())
        #expect(move(location, north(0), [running()]).isEmpty, "not authorized")
        authorize(location, .whenInUse)
        let delivered: [LocationSimulator.Effect] = [.send(id, .position(north(10))), .event(id, "delivered \(north(10))")]
        #expect(move(location, north(10), [running()]) == delivered)
        #expect(move(location, north(10), [running { $0.isInForeground = false }]).isEmpty, "in the background, not held")
        #expect(move(location, north(10), [running { $0.isInForeground = false; $0.heldByLocation = true }]) == delivered)
        #expect(move(location, north(10), [suspended()]).isEmpty, "suspended")
        #expect(move(location, north(10), [running { $0.launchFinished = false }]).isEmpty, "still launching")
        authorize(location, .denied)
        #expect(move(location, north(10), [running()]).isEmpty, "denied")
        // A new run has asked for nothing yet.
        authorize(location, .whenInUse)
        #expect(move(location, north(10), [running { $0.run = RunID(app: id, launch: 1) }]).isEmpty)
    }

    @Test func backgroundUpdatesHoldTheAppOnlyAuthorizedAndAllowed() throws {
        let location = try simulator()
        _ = location.set(north(0), apps: [])
        authorize(location, .whenInUse)
        let hold = LocationSimulator.Effect.hold(id, true, why: "updates continue in the background")
        #expect(!location.receive(LocationRequest(updating: true), from: running()).contains(hold), "not allowed in the background")
        let allowed = location.receive(LocationRequest(updating: true, background: true), from: running())
        #expect(allowed == [.event(id, "updating, in the background too, authorization whenInUse"), hold])
        // Updating already: no position again, and a hold already set is not set again.
        #expect(location.receive(LocationRequest(updating: true, background: true), from: running { $0.updatesInBackground = true }).count == 1)
        // Denied later: its updates fail and stop in the background.
        authorize(location, .denied)
        #expect(location.authorizationKept(.denied, for: running { $0.updatesInBackground = true }) == [
            .send(id, .authorization(.denied)), .event(id, "authorization denied"), .send(id, .denied),
            .hold(id, false, why: "updates stop in the background"), .deliverCurrent(id),
        ])
        #expect(location.authorizationKept(.always, for: running()).isEmpty, "changed meanwhile")
        #expect(location.authorizationKept(.denied, for: running { $0.isLive = false }).isEmpty, "not running")
    }

    @Test func updatesThatBeginReceiveThePositionOrFailIfDenied() throws {
        let location = try simulator()
        _ = location.set(north(0), apps: [])
        authorize(location, .always)
        #expect(location.receive(LocationRequest(updating: true), from: running()).last == .deliverCurrent(id))
        authorize(location, .denied)
        let denied = location.receive(LocationRequest(updating: true), from: running { $0.run = RunID(app: id, launch: 1) })
        #expect(denied == [.event(id, "updating, authorization denied"), .send(id, .denied), .deliverCurrent(id)])
        #expect(location.authorizationAsked(always: true, by: running(), name: "Run") == [.event(id, "asked for always authorization; it is denied")])
    }

    @Test func authorizationsAreKeptAndDeniedIsNotAuthorized() async throws {
        let path = try files.url("kept.json").path
        let location = try simulator(path)
        await withCheckedContinuation { kept in location.authorize(identifier, .denied) { kept.resume() } }
        #expect(!location.isAuthorized(identifier))
        let again = try simulator(path)
        #expect(again.authorization(of: identifier) == .denied)
        #expect(again.loadWarning == nil)
    }

    @Test func aRouteMovesTheDeviceOnTheClockAndEnds() throws {
        let location = try simulator()
        authorize(location, .always)
        _ = location.receive(LocationRequest(updating: true), from: running())
        let gpx = """
            <gpx><trk><trkseg><trkpt lat="48.85" lon="2.35"></trkpt><trkpt lat="48.86" lon="2.35"></trkpt></trkseg></trk></gpx>
            """
        let route = try LocationRoute(gpx: Data(gpx.utf8), speed: 100)
        let (line, effects) = location.replay(route, name: "park.gpx", now: start, apps: [running()])
        #expect(line.hasPrefix("replaying park.gpx: 2 points over"))
        #expect(effects == [
            .event(nil, line), .send(id, .position(route.points[0])), .event(id, "delivered \(route.points[0])"),
            .routeDeadline(start + interval),
        ])
        #expect(location.isReplaying)
        let halfway = start + .seconds(double: route.duration / 2)
        let step = location.step(now: halfway, apps: [])
        #expect(step == [.routeDeadline(halfway + interval)])
        let end = start + .seconds(double: route.duration + 1)
        #expect(location.step(now: end, apps: []) == [.routeDeadline(nil), .event(nil, "park.gpx finished at \(route.points[1])")])
        #expect(!location.isReplaying && location.step(now: end + .seconds(100), apps: []).isEmpty)
        // Where the route left the device.
        #expect(location.current(for: running()) == [.send(id, .position(route.points[1])), .event(id, "delivered \(route.points[1])")])
    }

    @Test func aRouteStopsWhenThePositionIsSetOrCleared() throws {
        let location = try simulator()
        let gpx = """
            <gpx><trk><trkseg><trkpt lat="48.85" lon="2.35"></trkpt><trkpt lat="48.86" lon="2.35"></trkpt></trkseg></trk></gpx>
            """
        let route = try LocationRoute(gpx: Data(gpx.utf8), speed: 10)
        _ = location.replay(route, name: "r.gpx", now: start, apps: [])
        #expect(location.set(north(0), apps: []) == ("the device is at \(north(0))", [.routeDeadline(nil), .event(nil, "the device is at \(north(0))")]))
        #expect(!location.isReplaying)
        _ = location.replay(route, name: "r.gpx", now: start, apps: [])
        #expect(location.clear().effects == [.routeDeadline(nil), .event(nil, "the device's position is cleared")])
        #expect(!location.isReplaying)
        #expect(location.current(for: running()).isEmpty, "no position")
    }
}
