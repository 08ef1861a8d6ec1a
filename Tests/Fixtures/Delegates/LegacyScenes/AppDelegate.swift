//
//  AppDelegate.swift
//  Gallery
//
//  @UIApplicationMain on an NSObject, with scenes adopted later on.
//

import UIKit
import BackgroundTasks

@UIApplicationMain
class AppDelegate: NSObject, UIApplicationDelegate {

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        print("Gallery launched in state \(application.applicationState.rawValue)")
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.gallery.refresh", using: nil) { task in
            print("Gallery refreshed its albums")
            task.setTaskCompleted(success: true)
        }
        return true
    }

    func application(_ application: UIApplication, configurationForConnecting connectingSceneSession: UISceneSession, options: UIScene.ConnectionOptions) -> UISceneConfiguration {
        UISceneConfiguration(name: "Default Configuration", sessionRole: connectingSceneSession.role)
    }

    func applicationWillTerminate(_ application: UIApplication) {
        print("Gallery will terminate")
    }
}
