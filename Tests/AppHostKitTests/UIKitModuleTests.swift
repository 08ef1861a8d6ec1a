import Foundation
import Testing
import UIKit
import BackgroundTasks
@testable import AppHostKit
@testable import os
@testable import XcodeTemplateFixture

/// An app delegate written as on iOS: UIKit's names, `UIResponder`, notifications observed.
@MainActor
final class UIKitStyleDelegate: UIResponder, UIApplicationDelegate {
    var calls: [String] = []
    var launchReason: UIApplication.LaunchReason?

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        calls.append("didFinishLaunching")
        return true
    }
    func applicationDidBecomeActive(_ application: UIApplication) { calls.append("didBecomeActive") }
    func applicationWillResignActive(_ application: UIApplication) { calls.append("willResignActive") }
    func applicationDidEnterBackground(_ application: UIApplication) {
        calls.append("didEnterBackground")
        let task: UIBackgroundTaskIdentifier = application.beginBackgroundTask(withName: "Save", expirationHandler: nil)
        application.endBackgroundTask(task)
    }
    func applicationWillEnterForeground(_ application: UIApplication) { calls.append("willEnterForeground") }
    func applicationWillTerminate(_ application: UIApplication) { calls.append("willTerminate") }
    func applicationDidReceiveMemoryWarning(_ application: UIApplication) { calls.append("didReceiveMemoryWarning") }
}

@Suite(.serialized)
struct UIKitModuleTests {
    /// DetachedApplication posts UIKit's notifications right after each delegate method, with the
    /// application as their object, as the host's app process does.
    @MainActor @Test func notificationsFollowTheirDelegateMethodsWithTheApplicationAsObject() {
        let app = DetachedApplication<UIKitStyleDelegate>()
        let names: [Notification.Name] = [
            UIApplication.didFinishLaunchingNotification, UIApplication.didBecomeActiveNotification,
            UIApplication.willResignActiveNotification, UIApplication.didEnterBackgroundNotification,
            UIApplication.willEnterForegroundNotification, UIApplication.willTerminateNotification,
            UIApplication.didReceiveMemoryWarningNotification,
        ]
        let delegate = app.delegate
        let tokens = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: app.application, queue: nil) { notification in
                let posted = notification.name.rawValue
                let reason = notification.userInfo?["launchReason"] as? UIApplication.LaunchReason
                MainActor.assumeIsolated {
                    delegate.calls.append(posted)
                    if reason != nil { delegate.launchReason = reason }
                }
            }
        }
        defer { tokens.forEach(NotificationCenter.default.removeObserver) }

        app.launch()
        app.receiveMemoryWarning()
        app.enterBackground()
        app.enterForeground()
        app.terminate()
        #expect(delegate.calls == [
            "didFinishLaunching", "UIApplicationDidFinishLaunchingNotification",
            "didBecomeActive", "UIApplicationDidBecomeActiveNotification",
            "didReceiveMemoryWarning", "UIApplicationDidReceiveMemoryWarningNotification",
            "willResignActive", "UIApplicationWillResignActiveNotification",
            "didEnterBackground", "UIApplicationDidEnterBackgroundNotification",
            "willEnterForeground", "UIApplicationWillEnterForegroundNotification",
            "didBecomeActive", "UIApplicationDidBecomeActiveNotification",
            "willTerminate", "UIApplicationWillTerminateNotification",
        ])
        #expect(delegate.launchReason == .user)
    }

    /// Xcode's template AppDelegate, `@main` and all, driven detached in a test process that has
    /// its own `main` (the fixture renames its entry point).
    @MainActor @Test func theXcodeTemplatesAppDelegateRunsDetached() throws {
        let plist = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/XcodeTemplate/Info.plist").standardizedFileURL
        let app = try DetachedApplication<XcodeTemplateFixture.AppDelegate>(infoPlist: plist)
        #expect(app.launch())
        #expect(app.registeredTaskIdentifiers == ["com.example.XcodeTemplate.refresh"])
        #expect(app.state == .active)
    }

    /// The scene types the Xcode template needs exist with UIKit's shapes (the scene life cycle:
    /// SceneLifecycleTests and DetachedSceneTests).
    @MainActor @Test func theTemplatesSceneTypesHaveUIKitsShapes() {
        let app = DetachedApplication<UIKitStyleDelegate>()
        let session = UISceneSession(persistentIdentifier: "one", role: .windowApplication, configuration: UISceneConfiguration(name: nil, sessionRole: .windowApplication))
        let configuration = app.delegate.application(app.application, configurationForConnecting: session, options: UIScene.ConnectionOptions())
        #expect(configuration.role == .windowApplication && configuration.name == nil)
        #expect(UISceneSession.Role.windowApplication.rawValue == "UIWindowSceneSessionRoleApplication")
        let scene: UIScene = UIWindowScene(session: session, connectionOptions: UIScene.ConnectionOptions())
        let windowScene = scene as? UIWindowScene
        let window = UIWindow(windowScene: windowScene!)
        #expect(windowScene?.windows.first === window)
        #expect(scene.activationState == .unattached)
        #expect(Set([session, session]).count == 1)
    }

    @Test func osTypesMapToSwiftLogLevels() {
        #expect([OSLogType.debug, .info, .default, .error, .fault].map { "\($0.level)" } == ["debug", "info", "notice", "error", "critical"])
        #expect(OSLogType.error.rawValue == 0x10 && OSLogType.fault.rawValue == 0x11)
    }

    @Test func labelsAreSubsystemSlashCategoryOrTheBundleIdentifier() {
        #expect(OSLog(subsystem: "com.example.app", category: "sync").label == "com.example.app/sync")
        #expect(OSLog(subsystem: "com.example.app", category: "").label == "com.example.app")
        #expect(OSLog.default.label == Application.shared.bundleIdentifier)
        #expect(!OSLog.disabled.isEnabled(type: .fault))
    }

    @Test func messagesInterpolateWithPrivacyAndFormats() {
        let name = "Ada"
        let count = 255
        let message: OSLogMessage = "user \(name, privacy: .private) has \(count, format: .hex(includePrefix: true)) notes, \(2.0 / 3.0, format: .fixed(precision: 2)), \(-8, format: .octal)"
        #expect(message.text == "user Ada has 0xff notes, 0.67, -10")
        let logger = Logger(subsystem: "com.example.app", category: "test")
        logger.debug("below the level: not sent")
        logger.notice("\(count, privacy: .public)")
        os_log("plain")
        os_log("%@ has %d notes", log: OSLog(subsystem: "com.example.app", category: "test"), type: .error, name, count)
        os_log(.fault, log: .default, "%{public}@ failed", name)
        os_log(.info, "interpolated \(count)")
        #expect(formatted("%{public}@ has %d notes, %{private}@", [name, count, "x"]) == "Ada has 255 notes, x")
        #expect(formatted("100%% done, %d", []) == "100% done, %d", "without arguments nothing is converted")
    }
}
