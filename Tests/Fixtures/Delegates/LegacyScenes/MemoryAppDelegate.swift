//
//  MemoryAppDelegate.swift
//  Gallery
//
//  A delegate that empties its image cache when memory runs short.
//

import UIKit

class MemoryAppDelegate: UIResponder, UIApplicationDelegate {

    var window: UIWindow?
    let imageCache = NSCache<NSString, NSData>()

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        imageCache.countLimit = 100
        window = UIWindow(frame: UIScreen.main.bounds)
        window?.rootViewController = UIViewController()
        window?.makeKeyAndVisible()
        return true
    }

    func applicationDidReceiveMemoryWarning(_ application: UIApplication) {
        imageCache.removeAllObjects()
        print("Gallery emptied its cache")
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        var task: UIBackgroundTaskIdentifier = .invalid
        task = application.beginBackgroundTask {
            application.endBackgroundTask(task)
            task = .invalid
        }
        print("Gallery saving")
        application.endBackgroundTask(task)
        task = .invalid
    }
}
