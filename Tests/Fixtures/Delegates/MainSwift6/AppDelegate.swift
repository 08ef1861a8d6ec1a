//
//  AppDelegate.swift
//  Tracker
//
//  @main on an NSObject delegate, as a project converted from @UIApplicationMain writes it.
//

import UIKit
import BackgroundTasks
import os

@main
final class AppDelegate: NSObject, UIApplicationDelegate {
    private let logger = Logger(subsystem: "com.example.tracker", category: "app")
    var window: UIWindow?

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.tracker.sync", using: .main) { task in
            MainActor.assumeIsolated {
                self.logger.info("Tracker synced")
                task.setTaskCompleted(success: true)
            }
        }
        window = UIWindow(frame: UIScreen.main.bounds)
        window?.rootViewController = UIViewController()
        window?.makeKeyAndVisible()
        logger.info("Tracker launched")
        return true
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        let identifier = application.beginBackgroundTask(withName: "Flush") {
            self.logger.error("Flush expired")
        }
        UserDefaults.standard.set(Date().timeIntervalSince1970, forKey: "lastFlush")
        application.endBackgroundTask(identifier)
    }

    func applicationWillTerminate(_ application: UIApplication) {
        logger.info("Tracker terminating")
    }
}
