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
//     "present": [OPTION]          willPresent completes with these (badge, sound, alert, list,
//                                  banner); default [banner]
//     "categories": [{"id": C, "customDismiss": B,
//                     "actions": [{"id": A, "foreground": B, "text": B}]}]
//                                  in didFinishLaunching, setNotificationCategories (a "text"
//                                  action is a UNTextInputNotificationAction); an "add" request's
//                                  "category" is its categoryIdentifier
//     "listDelivered": true        in didFinishLaunching and didBecomeActive, and after each
//                                  didReceive, record getDeliveredNotifications
//     "removeDelivered": [ID]      in didBecomeActive, removeDeliveredNotifications(withIdentifiers:)
//   }
// The Probe is the center's delegate from didFinishLaunching on; it records what it is told
// ("notification authorization granted=…", "notification settings N", "willPresent ID STATE",
// "didReceive ID ACTION STATE userInfo=… [text=…]", "deviceToken HEX", "delivered CALLBACK
// ID,ID newestFirst=B"), with applicationState.
extension AppDelegate: UNUserNotificationCenterDelegate {
    func notificationProbes(in callback: String) {
        guard let notifications = behavior["notifications"] as? [String: Any] else { return }
        let center = UNUserNotificationCenter.current()
        if callback == "didBecomeActive", let remove = notifications["removeDelivered"] as? [String] {
            center.removeDeliveredNotifications(withIdentifiers: remove)
        }
        if callback == "didFinishLaunching" || callback == "didBecomeActive" { recordDelivered(callback) }
        guard callback == "didFinishLaunching" else { return }
        center.delegate = self
        if let categories = notifications["categories"] as? [[String: Any]] {
            center.setNotificationCategories(Set(categories.map { category in
                let actions = (category["actions"] as? [[String: Any]] ?? []).map { action -> UNNotificationAction in
                    let id = action["id"] as? String ?? ""
                    let options: UNNotificationActionOptions = action["foreground"] as? Bool == true ? [.foreground] : []
                    guard action["text"] as? Bool == true else { return UNNotificationAction(identifier: id, title: id, options: options) }
                    return UNTextInputNotificationAction(identifier: id, title: id, options: options, textInputButtonTitle: "Send", textInputPlaceholder: "")
                }
                return UNNotificationCategory(
                    identifier: category["id"] as? String ?? "", actions: actions, intentIdentifiers: [],
                    options: category["customDismiss"] as? Bool == true ? [.customDismissAction] : [])
            }))
        }
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
            content.categoryIdentifier = request["category"] as? String ?? ""
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
        let names: [String: UNNotificationPresentationOptions] = ["badge": .badge, "sound": .sound, "alert": .alert, "list": .list, "banner": .banner]
        let asked = (behavior["notifications"] as? [String: Any])?["present"] as? [String]
        completionHandler(asked.map { UNNotificationPresentationOptions($0.compactMap { names[$0] }) } ?? [.banner])
    }

    func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let info = response.notification.request.content.userInfo["probe"] as? String ?? "-"
        let text = (response as? UNTextInputNotificationResponse).map { " text=\($0.userText)" } ?? ""
        record("didReceive \(response.notification.request.identifier) \(response.actionIdentifier) \(Application.shared.applicationState) userInfo=\(info)\(text)")
        recordDelivered("didReceive")
        completionHandler()
    }

    /// Records the delivered notifications, if the behaviour asks: identifiers newest first, and
    /// whether their dates say so.
    private func recordDelivered(_ callback: String) {
        guard (behavior["notifications"] as? [String: Any])?["listDelivered"] as? Bool == true else { return }
        UNUserNotificationCenter.current().getDeliveredNotifications { [weak self] delivered in
            let ids = delivered.map(\.request.identifier).joined(separator: ",")
            let newestFirst = zip(delivered, delivered.dropFirst()).allSatisfy { $0.date >= $1.date }
            DispatchQueue.main.async { MainActor.assumeIsolated { self?.record("delivered \(callback) \(ids) newestFirst=\(newestFirst)") } }
        }
    }

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        record("deviceToken \(deviceToken.map { String(format: "%02x", $0) }.joined()) registered=\(application.isRegisteredForRemoteNotifications)")
    }
}
