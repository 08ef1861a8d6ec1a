//
//  LocationAppDelegate.swift
//  Radio
//
//  A delegate that tracks significant location changes, restarted when iOS relaunches the app.
//

import UIKit
import CoreLocation
import OSLog

class LocationAppDelegate: UIResponder, UIApplicationDelegate, CLLocationManagerDelegate {

    var window: UIWindow?
    let locationManager = CLLocationManager()
    let logger = Logger(subsystem: "com.example.radio", category: "location")

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        locationManager.delegate = self
        if launchOptions?[.location] != nil {
            logger.notice("Relaunched for a location event")
            locationManager.startMonitoringSignificantLocationChanges()
        }
        if locationManager.authorizationStatus == .notDetermined {
            locationManager.requestAlwaysAuthorization()
        }
        return true
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        guard let location = locations.last else { return }
        logger.info("Moved to \(location.coordinate.latitude), \(location.coordinate.longitude)")
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        logger.error("Location failed: \(error.localizedDescription)")
    }
}
