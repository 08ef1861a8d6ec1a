import AppHostKit
import Foundation
import Testing

/// A delegate that registers for remote notifications and records its token.
@MainActor
final class TokenDelegate: ApplicationDelegate {
    var tokens: [Data] = []

    init() {}

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        tokens.append(deviceToken)
    }
}

/// UserNotifications in a detached application, which has no host to authorize it or hand it a
/// token (README.md, "Porting iOS code"): authorization is denied with a warning instead of
/// waiting forever, and registration hands out the token the host would.
@MainActor
struct DetachedNotificationTests {
    @Test(.timeLimit(.minutes(1)))
    func authorizationIsDeniedAndRegistrationGivesTheHostsToken() async throws {
        let app = DetachedApplication<TokenDelegate>(infoDictionary: ["CFBundleIdentifier": "test.recipesvariant"])
        app.launch()
        #expect(await UNUserNotificationCenter.current().notificationSettings().authorizationStatus == .notDetermined)
        #expect(try await UNUserNotificationCenter.current().requestAuthorization(options: [.alert]) == false)
        #expect(await UNUserNotificationCenter.current().notificationSettings().authorizationStatus == .denied)
        #expect(app.warnings.contains("UNUserNotificationCenter.requestAuthorization: a detached application has no host to authorize it: denied"))
        Application.shared.registerForRemoteNotifications()
        while app.delegate.tokens.isEmpty { await Task.yield() }
        // The same token as the host hands test.recipesvariant (UIKitCorpusTests' PushAppDelegate walk).
        #expect(app.delegate.tokens.map { $0.map { String(format: "%02x", $0) }.joined() } == [
            "c132be5f3421b70b48ed5bf84de9f307ebf502bf3a3e76fcee999126627dc7c2",
        ])
        #expect(Application.shared.isRegisteredForRemoteNotifications)
    }
}
