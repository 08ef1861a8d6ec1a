import AppHostKit
import Foundation

/// A run tracker: it declares `location` in UIBackgroundModes, asks for always authorization and
/// updates its location in the background too (`allowsBackgroundLocationUpdates`), so a run goes
/// on being recorded after the user leaves the app. It prints each position with the distance so
/// far and saves the run to Documents/run.json. Replay the route beside it on the host:
///
///     authorize RunTracker location always
///     location route Examples/RunTracker/park-loop.gpx --speed 50
///
/// Without authorization it says so (`CLError.denied`); `location clear` or the end of the route
/// leaves it waiting, still held in the background by its updates until it stops them.
final class AppDelegate: ApplicationDelegate, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private var positions: [CLLocation] = []
    private var distance = 0.0

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        manager.delegate = self
        manager.requestAlwaysAuthorization()
        manager.allowsBackgroundLocationUpdates = true
        manager.startUpdatingLocation()
        return true
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations {
            if let last = positions.last { distance += location.distance(from: last) }
            positions.append(location)
            print(String(
                format: "RunTracker: %.5f,%.5f, %.0f m so far (%@)", location.coordinate.latitude, location.coordinate.longitude,
                distance, "\(Application.shared.applicationState)"))
        }
        save()
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        print("RunTracker: no location: \(error)")
    }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        print("RunTracker: authorization \(manager.authorizationStatus)")
    }

    func applicationWillTerminate(_ application: Application) {
        manager.stopUpdatingLocation()
        save()
    }

    private func save() {
        let run: [String: Any] = [
            "meters": distance.rounded(),
            "points": positions.map { [$0.coordinate.latitude, $0.coordinate.longitude] },
        ]
        let url = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0].appendingPathComponent("run.json")
        if let data = try? JSONSerialization.data(withJSONObject: run, options: [.sortedKeys]) { try? data.write(to: url) }
    }
}
