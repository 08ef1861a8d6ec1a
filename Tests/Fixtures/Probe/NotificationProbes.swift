import AppHostKit
import Foundation

// What the Probe does with user notifications, from ProbeBehavior:
//   "notifications": {
//     "request": true              in didFinishLaunching, requestAuthorization, then
//                                  getNotificationSettings once it is answered
//     "add": [{"id": ID, "title": T, "after": S, "hour": H, "minute": M, "repeats": B}]
//                                  in didFinishLaunching, add these requests (a time interval
//                                  trigger after S seconds, a calendar one at H:M, else none)
//     "remove": [ID]               then removePendingNotificationRequests(withIdentifiers:)
//     "register": true             registerForRemoteNotifications()
//   }
// The Probe is the center's delegate from didFinishLaunching on; it records what it is told
// ("notification authorization granted=…", "notification settings N", "willPresent ID STATE",
// "didReceive ID ACTION STATE", "deviceToken HEX"), with applicationState.
extension AppDelegate: UNUserNotificationCenterDelegate {
    func notificationProbes(in callback: String) {
        guard callback == "didFinishLaunching", let notifications = behavior["notifications"] as? [String: Any] else { return }
        let center = UNUserNotificationCenter.current()
        center.delegate = self
        if notifications["request"] as? Bool == true {
            center.requestAuthorization(options: [.alert, .sound]) { [weak self] granted, _ in
                DispatchQueue.main.async {
                    MainActor.assumeIsolated { self?.record("notification authorization granted=\(granted)") }
                    center.getNotificationSettings { settings in
                        DispatchQueue.main.async {
                            MainActor.assumeIsolated { self?.record("notification settings \(settings.authorizationStatus.rawValue)") }
                        }
                    }
                }
            }
        }
        for request in notifications["add"] as? [[String: Any]] ?? [] {
            let content = UNMutableNotificationContent()
            content.title = request["title"] as? String ?? ""
            content.userInfo = ["probe": request["id"] as? String ?? ""]
            let repeats = request["repeats"] as? Bool ?? false
            var trigger: UNNotificationTrigger?
            if let seconds = request["after"] as? Double {
                trigger = UNTimeIntervalNotificationTrigger(timeInterval: seconds, repeats: repeats)
            } else if let hour = request["hour"] as? Int {
                trigger = UNCalendarNotificationTrigger(dateMatching: DateComponents(hour: hour, minute: request["minute"] as? Int ?? 0), repeats: repeats)
            }
            center.add(UNNotificationRequest(identifier: request["id"] as? String ?? "", content: content, trigger: trigger))
        }
        if let remove = notifications["remove"] as? [String] { center.removePendingNotificationRequests(withIdentifiers: remove) }
        if notifications["register"] as? Bool == true { Application.shared.registerForRemoteNotifications() }
    }

    func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void
    ) {
        record("willPresent \(notification.request.identifier) \(Application.shared.applicationState) main=\(Thread.isMainThread)")
        completionHandler([.banner])
    }

    func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let info = response.notification.request.content.userInfo["probe"] as? String ?? "-"
        record("didReceive \(response.notification.request.identifier) \(response.actionIdentifier) \(Application.shared.applicationState) userInfo=\(info)")
        completionHandler()
    }

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        record("deviceToken \(deviceToken.map { String(format: "%02x", $0) }.joined()) registered=\(application.isRegisteredForRemoteNotifications)")
    }
}
