public import Foundation
import AppHostProtocol

/// A position on the earth, in degrees (WGS 84), as the simulated device reports it.
public struct Coordinate: Sendable, Equatable, Codable, CustomStringConvertible {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// "LAT,LON", as `location set` takes it; nil with the reason for anything else.
    public static func parse(_ text: String) -> Result<Coordinate, LocationError> {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let latitude = Double(parts[0]), let longitude = Double(parts[1]) else {
            return .failure(LocationError("a position is LATITUDE,LONGITUDE in degrees, e.g. 48.8584,2.2945; got \(text)"))
        }
        return Coordinate.checked(latitude: latitude, longitude: longitude)
    }

    static func checked(latitude: Double, longitude: Double) -> Result<Coordinate, LocationError> {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            return .failure(LocationError("latitude must be within -90…90 and longitude within -180…180 degrees; got \(latitude),\(longitude)"))
        }
        return .success(Coordinate(latitude: latitude, longitude: longitude))
    }

    /// The great-circle distance to `other`, in metres (haversine, mean earth radius).
    public func distance(to other: Coordinate) -> Double {
        WireLocation.distance((latitude, longitude), (other.latitude, other.longitude))
    }

    /// The point a `fraction` of the way to `other` (linear in degrees: routes' legs are short).
    func interpolated(to other: Coordinate, _ fraction: Double) -> Coordinate {
        Coordinate(
            latitude: latitude + (other.latitude - latitude) * fraction,
            longitude: longitude + (other.longitude - longitude) * fraction)
    }

    public var description: String { String(format: "%.6f,%.6f", latitude, longitude) }
}

public struct LocationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A route from a GPX file (`location route FILE.gpx [--speed M/S]`): its points, and when the
/// simulated device passes each, from the route's start.
///
/// At a fixed speed the device moves along the legs at that speed. Without one, the points'
/// `<time>`s set the pace where every point has one; otherwise it moves at `defaultSpeed`.
public struct LocationRoute: Sendable, Equatable {
    public static let defaultSpeed = 5.0  // metres per second: a run

    public private(set) var points: [Coordinate]
    /// Seconds from the route's start at which the device is at each point.
    public private(set) var offsets: [Double]

    public var duration: Double { offsets.last ?? 0 }

    /// The route of a GPX document: its track points, else its route points, else its waypoints.
    public init(gpx data: Data, speed: Double? = nil) throws(LocationError) {
        if let speed, !(speed.isFinite && speed > 0) {
            throw LocationError("--speed must be a positive number of metres per second; got \(speed)")
        }
        let reader = try GPXReader(String(decoding: data, as: UTF8.self))
        let chosen = [reader.track, reader.route, reader.waypoints].first { !$0.isEmpty } ?? []
        guard !chosen.isEmpty else { throw LocationError("the GPX file has no trkpt, rtept or wpt points") }
        points = chosen.map(\.coordinate)
        var offsets = [0.0]
        let times = chosen.compactMap(\.time)
        if speed == nil, times.count == chosen.count, chosen.count > 1 {
            for time in times.dropFirst() { offsets.append(max(offsets.last!, time.timeIntervalSince(times[0]))) }
        } else {
            let pace = speed ?? Self.defaultSpeed
            for (from, to) in zip(points, points.dropFirst()) { offsets.append(offsets.last! + from.distance(to: to) / pace) }
        }
        self.offsets = offsets
    }

    /// Where the device is `elapsed` seconds after the route began (its last point once over).
    public func position(after elapsed: Double) -> Coordinate {
        guard elapsed > 0 else { return points[0] }
        guard let next = offsets.firstIndex(where: { $0 > elapsed }) else { return points[points.count - 1] }
        let previous = next - 1
        let leg = offsets[next] - offsets[previous]
        return points[previous].interpolated(to: points[next], leg > 0 ? (elapsed - offsets[previous]) / leg : 1)
    }
}

/// The points of a GPX 1.0 or 1.1 document: each `trkpt`, `rtept` and `wpt` element's `lat` and
/// `lon` attributes and its `<time>`. A scanner, not an XML parser: GPX needs no more, and the
/// host's binary is every app process's too, so it links no XML library.
private struct GPXReader {
    struct Point {
        var coordinate: Coordinate
        var time: Date?
    }

    var track: [Point] = []
    var route: [Point] = []
    var waypoints: [Point] = []

    init(_ text: String) throws(LocationError) {
        guard text.contains("<gpx") else { throw LocationError("not a GPX file: no <gpx> element") }
        var rest = Substring(text)
        while let open = rest.range(of: "<") {
            rest = rest[open.upperBound...]
            let name = String(rest.prefix { $0.isLetter })
            guard ["trkpt", "rtept", "wpt"].contains(name), let tagEnd = rest.firstIndex(of: ">") else { continue }
            let tag = rest[rest.index(rest.startIndex, offsetBy: name.count)..<tagEnd]
            // Counted only for an error: a route may have many thousands of points.
            var line: Int { text[..<rest.startIndex].filter { $0 == "\n" }.count + 1 }
            guard let latitude = Self.attribute("lat", in: tag).flatMap(Double.init),
                  let longitude = Self.attribute("lon", in: tag).flatMap(Double.init)
            else { throw LocationError("a \(name) at line \(line) has no numeric lat and lon") }
            var point: Point
            switch Coordinate.checked(latitude: latitude, longitude: longitude) {
            case .success(let coordinate): point = Point(coordinate: coordinate)
            case .failure(let error): throw LocationError("\(name) at line \(line): \(error)")
            }
            rest = rest[rest.index(after: tagEnd)...]
            if !tag.hasSuffix("/"), let close = rest.range(of: "</\(name)>") {
                let body = rest[..<close.lowerBound]
                if let start = body.range(of: "<time>"), let end = body.range(of: "</time>", range: start.upperBound..<body.endIndex) {
                    let stamp = body[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
                    point.time = HostEvent.isoFormatter.date(from: stamp) ?? ISO8601DateFormatter().date(from: stamp)
                }
                rest = rest[close.upperBound...]
            }
            switch name {
            case "trkpt": track.append(point)
            case "rtept": route.append(point)
            default: waypoints.append(point)
            }
        }
    }

    /// The value of `name="…"` (or `'…'`) among a tag's attributes.
    private static func attribute(_ name: String, in tag: Substring) -> String? {
        var rest = tag
        while let found = rest.range(of: name) {
            let before = rest[..<found.lowerBound].last
            var after = rest[found.upperBound...].drop { $0 == " " }
            rest = rest[found.upperBound...]
            guard before == nil || before == " " || before == "\t" || before == "\n", after.first == "=" else { continue }
            after = after.dropFirst().drop { $0 == " " }
            guard let quote = after.first, quote == "\"" || quote == "'" else { return nil }
            return String(after.dropFirst().prefix { $0 != quote })
        }
        return nil
    }
}
