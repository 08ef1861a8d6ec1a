import AppHostRuntime
import Foundation
import Testing

/// The simulated device's position: `location set`'s coordinates and GPX routes at a speed or at
/// their own pace.
@Suite struct LocationSimulationTests {
    /// Two legs due north along a meridian, 0.01° (1,111.95 m) each.
    private let track = """
        <?xml version="1.0"?>
        <gpx version="1.1" creator="test"><trk><trkseg>
          <trkpt lat="48.00" lon="2.0"><time>2026-11-23T10:00:00Z</time></trkpt>
          <trkpt lat='48.01' lon='2.0'><ele>35</ele><time>2026-11-23T10:01:40Z</time></trkpt>
          <trkpt lon="2.0" lat="48.02"><time>2026-11-23T10:05:00Z</time></trkpt>
        </trkseg></trk></gpx>
        """

    @Test func aPositionIsLatitudeCommaLongitude() throws {
        #expect(try Coordinate.parse("48.8584, 2.2945").get() == Coordinate(latitude: 48.8584, longitude: 2.2945))
        for bad in ["48.8", "north,east", "91,0", "0,181", "nan,0"] {
            #expect(throws: LocationError.self) { try Coordinate.parse(bad).get() }
        }
    }

    @Test func distancesAreGreatCircleMetres() {
        let paris = Coordinate(latitude: 48.8566, longitude: 2.3522)
        let london = Coordinate(latitude: 51.5074, longitude: -0.1278)
        #expect(abs(paris.distance(to: london) - 343_900) < 1_000)
        #expect(abs(Coordinate(latitude: 48, longitude: 2).distance(to: Coordinate(latitude: 48.01, longitude: 2)) - 1_111.95) < 0.5)
    }

    @Test func aRouteKeepsItsOwnPaceWithoutASpeed() throws {
        let route = try LocationRoute(gpx: Data(track.utf8))
        #expect(route.points.count == 3)
        #expect(route.offsets == [0, 100, 300])
        #expect(route.position(after: 50).latitude.isApproximately(48.005) && route.position(after: 50).longitude == 2)
        #expect(route.position(after: 200).latitude.isApproximately(48.015))
        #expect(route.position(after: 1_000) == Coordinate(latitude: 48.02, longitude: 2))
        #expect(route.position(after: -1) == Coordinate(latitude: 48, longitude: 2))
    }

    @Test func aSpeedSetsThePace() throws {
        let route = try LocationRoute(gpx: Data(track.utf8), speed: 10)
        #expect(route.duration.isApproximately(222.39, within: 0.05))
        #expect(route.position(after: route.duration / 4).latitude.isApproximately(48.005))
    }

    @Test func badRoutesSayWhatIsWrong() {
        func error(_ text: String, speed: Double? = nil) -> String? {
            do {
                _ = try LocationRoute(gpx: Data(text.utf8), speed: speed)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(error("hello") == "not a GPX file: no <gpx> element")
        #expect(error("<gpx></gpx>") == "the GPX file has no trkpt, rtept or wpt points")
        #expect(error("<gpx>\n<wpt lat=\"x\" lon=\"2\"/></gpx>") == "a wpt at line 2 has no numeric lat and lon")
        #expect(error("<gpx><wpt lat=\"95\" lon=\"2\"/></gpx>") == "wpt at line 1: latitude must be within -90…90 and longitude within -180…180 degrees; got 95.0,2.0")
        #expect(error(track, speed: 0) == "--speed must be a positive number of metres per second; got 0.0")
    }
}

extension Double {
    fileprivate func isApproximately(_ other: Double, within tolerance: Double = 1e-9) -> Bool { abs(self - other) <= tolerance }
}
