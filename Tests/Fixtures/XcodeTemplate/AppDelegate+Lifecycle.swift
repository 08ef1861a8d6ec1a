//
//  AppDelegate+Lifecycle.swift
//  XcodeTemplate
//
//  What an iOS app adds to the template (AppDelegate.swift and SceneDelegate.swift are Xcode's,
//  unchanged), written as on iOS: the app-delegate life cycle logged with os, life-cycle
//  notifications (the application's and its scenes') observed, a background-task save to
//  UserDefaults and a BGTaskScheduler refresh. The end-to-end test (UIKitPortingTests) reads the
//  log events.
//

import UIKit
import BackgroundTasks
import os

private let logger = Logger(subsystem: "com.example.XcodeTemplate", category: "lifecycle")
private let refreshTaskIdentifier = "com.example.XcodeTemplate.refresh"

extension AppDelegate {
    func application(_ application: UIApplication, willFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        let launches = UserDefaults.standard.integer(forKey: "launches") + 1
        UserDefaults.standard.set(launches, forKey: "launches")
        logger.info("willFinishLaunching launches=\(launches, privacy: .public)")
        registerBackgroundTasks()
        observeLifecycleNotifications()
        return true
    }

    func applicationDidBecomeActive(_ application: UIApplication) {
        logger.info("applicationDidBecomeActive state=\(application.applicationState.rawValue)")
    }

    func applicationWillResignActive(_ application: UIApplication) {
        logger.info("applicationWillResignActive")
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        logger.info("applicationDidEnterBackground")
        let task: UIBackgroundTaskIdentifier = application.beginBackgroundTask(withName: "Save") {
            logger.error("the save ran out of background time")
        }
        DispatchQueue.main.async {
            UserDefaults.standard.set("saved in the background", forKey: "lastSave")
            UserDefaults.standard.synchronize()
            logger.notice("saved, background task \(task.rawValue) ends")
            application.endBackgroundTask(task)
        }
    }

    func applicationWillEnterForeground(_ application: UIApplication) {
        logger.info("applicationWillEnterForeground")
    }

    func applicationWillTerminate(_ application: UIApplication) {
        logger.info("applicationWillTerminate")
    }

    func registerBackgroundTasks() {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: refreshTaskIdentifier, using: nil) { task in
            self.handleAppRefresh(task: task as! BGAppRefreshTask)
        }
        os_log("registered %@", log: OSLog(subsystem: "com.example.XcodeTemplate", category: "tasks"), type: .info, refreshTaskIdentifier)
    }

    func scheduleAppRefresh() {
        let request = BGAppRefreshTaskRequest(identifier: refreshTaskIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            logger.error("Could not schedule app refresh: \(error.localizedDescription)")
        }
    }

    nonisolated func handleAppRefresh(task: BGAppRefreshTask) {
        task.expirationHandler = {
            logger.fault("the refresh expired")
        }
        let lastSave = UserDefaults.standard.string(forKey: "lastSave") ?? "nothing"
        logger.info("refresh ran, last save: \(lastSave)")
        task.setTaskCompleted(success: true)
    }

    func observeLifecycleNotifications() {
        let names: [Notification.Name] = [
            UIApplication.didFinishLaunchingNotification, UIApplication.didBecomeActiveNotification,
            UIApplication.willResignActiveNotification, UIApplication.didEnterBackgroundNotification,
            UIApplication.willEnterForegroundNotification, UIApplication.willTerminateNotification,
            UIApplication.didReceiveMemoryWarningNotification,
        ]
        for name in names {
            _ = NotificationCenter.default.addObserver(forName: name, object: UIApplication.shared, queue: nil) { notification in
                let main = Thread.isMainThread
                logger.info("notification \(notification.name.rawValue) main=\(main)")
            }
        }
        // Each scene's notifications carry the scene as their object.
        let sceneNames: [Notification.Name] = [
            UIScene.willConnectNotification, UIScene.willEnterForegroundNotification, UIScene.didActivateNotification,
            UIScene.willDeactivateNotification, UIScene.didEnterBackgroundNotification, UIScene.didDisconnectNotification,
        ]
        for name in sceneNames {
            _ = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { notification in
                let scene = notification.object is UIWindowScene
                logger.info("notification \(notification.name.rawValue) scene=\(scene)")
            }
        }
    }
}
