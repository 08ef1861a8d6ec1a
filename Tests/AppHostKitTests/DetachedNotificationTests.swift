import AppHostKit
import Foundation
import Testing

/// A delegate that asks for notification authorization and registers for remote notifications
/// from its launch, and records what it heard. Its work runs in a task made in its callback,
/// which is therefore this application's (`Application.shared` and the notification center are,
/// whatever other tests run meanwhile).
@MainActor
final class TokenDelegate: ApplicationDelegate {
    var tokens: [Data] = [] { didSet { resumeIfDone() } }
    var heard: (before: UNAuthorizationStatus, granted: Bool, after: UNAuthorizationStatus)? { didSet { resumeIfDone() } }
    /// The test waiting for both answers, resumed once they have come.
    private var waiting: CheckedContinuation<Void, Never>?

    init() {}

    func application(_ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?) -> Bool {
        Task { @MainActor in
            let center = UNUserNotificationCenter.current()
            let before = await center.notificationSettings().authorizationStatus
            let granted = (try? await center.requestAuthorization(options: [.alert])) ?? true
            heard = (before, granted, await center.notificationSettings().authorizationStatus)
            application.registerForRemoteNotifications()
        }
        return true
    }

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        tokens.append(deviceToken)
    }

    /// Returns once the authorization's answer and a token have come (no turns of the main actor
    /// spent looking meanwhile).
    func answered() async {
        guard heard == nil || tokens.isEmpty else { return }
        await withCheckedContinuation { waiting = $0 }
    }

    private func resumeIfDone() {
        guard heard != nil, !tokens.isEmpty, let waiting else { return }
        self.waiting = nil
        waiting.resume()
    }
}

/// UserNotifications in a detached application, which has no host to authorize it or hand it a
/// token (docs/porting.md, "Porting iOS code"): authorization is denied with a warning instead of
/// waiting forever, and registration hands out the token the host would.
@MainActor
struct DetachedNotificationTests {
    @Test(.timeLimit(.minutes(1)))
    func authorizationIsDeniedAndRegistrationGivesTheHostsToken() async throws {
        let app = DetachedApplication<TokenDelegate>(infoDictionary: ["CFBundleIdentifier": "test.recipesvariant"])
        app.launch()
        await app.delegate.answered()
        let heard = try #require(app.delegate.heard)
        #expect(heard.before == .notDetermined && heard.granted == false && heard.after == .denied)
        #expect(app.warnings.contains("UNUserNotificationCenter.requestAuthorization: a detached application has no host to authorize it: denied"))
        // The same token as the host hands test.recipesvariant (UIKitCorpusTests' PushAppDelegate walk).
        #expect(app.delegate.tokens.map { $0.map { String(format: "%02x", $0) }.joined() } == [
            "c132be5f3421b70b48ed5bf84de9f307ebf502bf3a3e76fcee999126627dc7c2",
        ])
    }
}
