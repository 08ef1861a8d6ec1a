//
//  ReminderAppDelegate.swift
//  Habits
//
//  A delegate that sets up notification categories and schedules a daily reminder.
//

import UIKit
import UserNotifications
import BackgroundTasks

class ReminderAppDelegate: NSObject, UIApplicationDelegate {
    static let reminderCategory = "HABIT_REMINDER"
    static let refreshIdentifier = "com.example.habits.refresh"

    var window: UIWindow?

    override init() {
        super.init()
        print("ReminderAppDelegate created")
    }

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        let done = UNNotificationAction(identifier: "DONE", title: "Mark as done", options: [])
        let snooze = UNNotificationAction(identifier: "SNOOZE", title: "Remind me later", options: [.foreground])
        let category = UNNotificationCategory(identifier: Self.reminderCategory, actions: [done, snooze], intentIdentifiers: [], options: [.customDismissAction])
        UNUserNotificationCenter.current().setNotificationCategories([category])

        BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.refreshIdentifier, using: .main) { task in
            MainActor.assumeIsolated {
                self.scheduleReminder()
                task.setTaskCompleted(success: true)
            }
        }
        return true
    }

    func applicationDidBecomeActive(_ application: UIApplication) {
        UNUserNotificationCenter.current().getNotificationSettings { settings in
            print("Habits: authorization status \(settings.authorizationStatus.rawValue)")
        }
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        let request = BGAppRefreshTaskRequest(identifier: Self.refreshIdentifier)
        try? BGTaskScheduler.shared.submit(request)
    }

    func scheduleReminder() {
        let content = UNMutableNotificationContent()
        content.title = "Time for your habit"
        content.body = "Keep the streak going."
        content.sound = .default
        content.categoryIdentifier = Self.reminderCategory

        var components = DateComponents()
        components.hour = 9
        let trigger = UNCalendarNotificationTrigger(dateMatching: components, repeats: true)
        let request = UNNotificationRequest(identifier: "daily-reminder", content: content, trigger: trigger)
        UNUserNotificationCenter.current().add(request) { error in
            if let error {
                print("Habits: could not schedule the reminder: \(error)")
            } else {
                print("Habits: reminder scheduled")
            }
        }
    }
}
