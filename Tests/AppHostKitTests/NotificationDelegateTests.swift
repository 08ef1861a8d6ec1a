import Foundation
import Testing
@testable import AppHostKit

/// A center delegate written with Swift concurrency, as the Habits fixture's is: only the async
/// forms.
@MainActor
final class AsyncCenterDelegate: UNUserNotificationCenterDelegate {
    var heard: [String] = []

    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification) async -> UNNotificationPresentationOptions {
        heard.append("willPresent \(notification.request.identifier)")
        return [.banner, .list]
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        heard.append("didReceive \(response.notification.request.identifier) \(response.actionIdentifier)")
    }
}

/// The SDK calls the completion-handler forms; their defaults call a delegate's async forms and
/// complete with what they return, as Apple's bridging does.
@MainActor
struct NotificationDelegateTests {
    @Test(.timeLimit(.minutes(1)))
    func theCompletionFormsCallTheAsyncForms() async {
        let delegate = AsyncCenterDelegate()
        let center = UNUserNotificationCenter.current()
        let request = UNNotificationRequest(identifier: "tea", content: UNNotificationContent(), trigger: nil)
        let notification = UNNotification(request: request, date: Date())
        let options = await withCheckedContinuation { continuation in
            delegate.userNotificationCenter(center, willPresent: notification) { continuation.resume(returning: $0) }
        }
        #expect(options == [.banner, .list])
        await withCheckedContinuation { continuation in
            delegate.userNotificationCenter(
                center, didReceive: UNNotificationResponse(notification: notification, actionIdentifier: UNNotificationDefaultActionIdentifier)
            ) { continuation.resume() }
        }
        #expect(delegate.heard == ["willPresent tea", "didReceive tea com.apple.UNNotificationDefaultActionIdentifier"])
    }
}
