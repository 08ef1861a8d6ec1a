public import Foundation
import AppHostProtocol

// Core Location, as an iOS app uses it: a CLLocationManager whose delegate gets the simulated
// device's positions (`location set`, `location route` on the host) while the app is in the
// foreground, and in the background only when the app declares `location` in
// `UIBackgroundModes` and sets `allowsBackgroundLocationUpdates` — which then keeps it running.
// Authorization is a setting of the host (`authorize APP location always|whenInUse|denied`).

/// Degrees of latitude and longitude, as `CLLocationCoordinate2D`.
public struct CLLocationCoordinate2D: Sendable, Equatable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A position and when the device was there, as `CLLocation`.
public final class CLLocation: Sendable {
    public let coordinate: CLLocationCoordinate2D
    public let timestamp: Date

    public init(latitude: Double, longitude: Double) {
        coordinate = CLLocationCoordinate2D(latitude: latitude, longitude: longitude)
        timestamp = Date()
    }

    init(_ wire: WireLocation) {
        coordinate = CLLocationCoordinate2D(latitude: wire.latitude, longitude: wire.longitude)
        timestamp = Date(timeIntervalSince1970: wire.timestamp)
    }

    /// The great-circle distance to `location`, in metres.
    public func distance(from location: CLLocation) -> Double {
        WireLocation.distance(
            (coordinate.latitude, coordinate.longitude), (location.coordinate.latitude, location.coordinate.longitude))
    }
}

/// The app's location authorization, as `CLAuthorizationStatus` (raw values as Core Location's).
public enum CLAuthorizationStatus: Int32, Sendable {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case authorizedAlways = 3
    case authorizedWhenInUse = 4

    init(wire: String?) {
        switch wire {
        case "authorizedAlways": self = .authorizedAlways
        case "authorizedWhenInUse": self = .authorizedWhenInUse
        case "denied": self = .denied
        default: self = .notDetermined
        }
    }
}

/// A location error, as `CLError`: `catch let error as CLError where error.code == .denied`.
public struct CLError: Error, Sendable, CustomStringConvertible {
    public enum Code: Int, Sendable {
        case locationUnknown = 0
        case denied = 1
    }

    public var code: Code
    public var description: String {
        switch code {
        case .locationUnknown: "CLError.locationUnknown: the location is not known now"
        case .denied: "CLError.denied: the app is not authorized to use location (authorize APP location …)"
        }
    }
}

/// What a `CLLocationManager` tells the app, on the main queue. Each method is optional.
@MainActor
public protocol CLLocationManagerDelegate: AnyObject {
    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation])
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error)
    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager)
}

extension CLLocationManagerDelegate {
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {}
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {}
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {}
}

/// Location updates, as Core Location's `CLLocationManager`. Use it on the main actor; its
/// delegate's methods run on the main queue.
@MainActor
public final class CLLocationManager {
    public weak var delegate: (any CLLocationManagerDelegate)? {
        didSet {
            // As Core Location does: a new delegate learns the authorization at once.
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.delegate?.locationManagerDidChangeAuthorization(self)
                }
            }
        }
    }

    /// Whether updates continue in the background. Needs `location` in `UIBackgroundModes`:
    /// without it iOS raises; here it is refused with a warning, and updates stop in the background.
    public var allowsBackgroundLocationUpdates = false {
        didSet {
            if allowsBackgroundLocationUpdates && !Self.declaresLocationMode {
                // As iOS: an uncaught NSInternalInconsistencyException, which ends the app.
                fatalError("NSInternalInconsistencyException: allowsBackgroundLocationUpdates was set to true, but the app does not declare location in its Info.plist UIBackgroundModes; declare the mode, or leave the property false")
            }
            Self.report()
        }
    }

    /// The most recent position this manager received.
    public private(set) var location: CLLocation?
    private var updating = false
    private var monitoringSignificantChanges = false

    private static var managers: [WeakManager] = []
    private static var reported: (updating: Bool, background: Bool, significant: Bool)?
    /// The authorization the host last gave.
    static var authorization = CLAuthorizationStatus(wire: Application.shared.link.configuration.locationAuthorization)

    public init() {
        Self.managers.removeAll { $0.manager == nil }
        Self.managers.append(WeakManager(manager: self))
    }

    public var authorizationStatus: CLAuthorizationStatus { Self.authorization }

    /// Significant-change monitoring is always available here.
    public static func significantLocationChangeMonitoringAvailable() -> Bool { true }

    /// Asks for authorization while the app is in use. The host's setting answers: the
    /// request is shown as a `location` event for whoever runs the host.
    public func requestWhenInUseAuthorization() {
        Application.shared.link.send(.requestLocationAuthorization(always: false))
    }

    /// Asks for authorization at any time (background updates, significant changes).
    public func requestAlwaysAuthorization() {
        Application.shared.link.send(.requestLocationAuthorization(always: true))
    }

    public func startUpdatingLocation() {
        updating = true
        Self.report()
    }

    public func stopUpdatingLocation() {
        updating = false
        Self.report()
    }

    /// Updates after moves of 500 m or more; while monitoring, a significant change wakes the app
    /// in the background, or relaunches it (launch reason `.location`) if it was terminated and
    /// not force quit by the user. Needs `authorizedAlways`.
    public func startMonitoringSignificantLocationChanges() {
        monitoringSignificantChanges = true
        Self.report()
    }

    public func stopMonitoringSignificantLocationChanges() {
        monitoringSignificantChanges = false
        Self.report()
    }

    private static var declaresLocationMode: Bool {
        Application.shared.link.configuration.backgroundTasks?.modes.contains("location") == true
    }

    private static var live: [CLLocationManager] { managers.compactMap(\.manager) }

    /// Tells the host what the managers ask for together, when it changed.
    private static func report() {
        let all = live
        let updating = all.contains { $0.updating }
        let now = (
            updating: updating, background: all.contains { $0.updating && $0.allowsBackgroundLocationUpdates },
            significant: all.contains { $0.monitoringSignificantChanges })
        if let reported, reported == now { return }
        reported = now
        Application.shared.link.send(.locationManager(updating: now.updating, background: now.background, significant: now.significant))
    }

    /// A position from the host: to managers that update, or (`significantOnly`) that monitor
    /// significant changes.
    static func deliver(_ wire: WireLocation, significantOnly: Bool = false) -> Bool {
        let location = CLLocation(wire)
        let targets = live.filter { significantOnly ? $0.monitoringSignificantChanges : ($0.updating || $0.monitoringSignificantChanges) }
        for manager in targets {
            manager.location = location
            manager.delegate?.locationManager(manager, didUpdateLocations: [location])
        }
        return !targets.isEmpty
    }

    static func fail(code: Int) {
        let error = CLError(code: CLError.Code(rawValue: code) ?? .locationUnknown)
        for manager in live where manager.updating { manager.delegate?.locationManager(manager, didFailWithError: error) }
    }

    static func authorizationChanged(_ wire: String) {
        authorization = CLAuthorizationStatus(wire: wire)
        for manager in live { manager.delegate?.locationManagerDidChangeAuthorization(manager) }
    }

    private struct WeakManager {
        weak var manager: CLLocationManager?
    }
}
