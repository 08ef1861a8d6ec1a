//
//  SyncAppDelegate.swift
//  Tracker
//
//  A delegate that schedules processing work and reports why a request was refused.
//

import UIKit
import BackgroundTasks

class SyncAppDelegate: UIResponder, UIApplicationDelegate {

    var window: UIWindow?

    func application(_ application: UIApplication, willFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.tracker.sync", using: .main) { task in
            MainActor.assumeIsolated {
                print("Tracker processing ran")
                task.setTaskCompleted(success: true)
            }
        }
        return true
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        let request = BGProcessingTaskRequest(identifier: "com.example.tracker.unlisted")
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch let error as BGTaskScheduler.Error where error.code == .notPermitted {
            print("Tracker: not permitted, code \(error.errorCode)")
        } catch {
            print("Tracker: \(error)")
        }
    }
}
