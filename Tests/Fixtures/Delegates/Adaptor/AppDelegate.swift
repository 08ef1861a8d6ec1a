//
//  AppDelegate.swift
//  Habits
//
//  The app delegate of a SwiftUI app, handed to @UIApplicationDelegateAdaptor: an NSObject.
//

import UIKit
import UserNotifications
import os

final class AppDelegate: NSObject, UIApplicationDelegate, UNUserNotificationCenterDelegate {
    private let logger = Logger(subsystem: "com.example.habits", category: "AppDelegate")

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        let center = UNUserNotificationCenter.current()
        center.delegate = self
        center.requestAuthorization(options: [.alert, .badge, .sound]) { granted, error in
            if let error {
                print("Habits: authorization failed: \(error)")
            } else {
                print("Habits: notifications granted=\(granted)")
            }
        }
        logger.info("Habits launched")
        return true
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        logger.info("Habits in the background")
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification) async -> UNNotificationPresentationOptions {
        [.banner, .list, .sound]
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        logger.info("Opened \(response.notification.request.identifier)")
    }
}
