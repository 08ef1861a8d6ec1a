import Foundation
import Testing

/// iOS code compiles and runs unchanged on UIKit, BackgroundTasks and os (docs/porting.md, "Porting
/// iOS code"): the XcodeTemplate fixture is Xcode 16's iOS App template (its AppDelegate and
/// SceneDelegate as Xcode writes them) plus what an app adds — the app-delegate life cycle logged
/// with os, life-cycle notifications observed, a background-task save to UserDefaults and a
/// BGTaskScheduler refresh.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct UIKitPortingTests {
    private static let identifier = "com.example.XcodeTemplate"

    /// A host running the fixture, launched to the foreground.
    private func launched(_ scratch: Scratch) throws -> HostSession {
        let app = Paths.apps.appendingPathComponent("XcodeTemplate.app")
        try Paths.requireBuilt(app)
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor("XcodeTemplate", "didBecomeActive")
        return host
    }

    /// The app's log events and its life-cycle events, in the order the host saw them: a log
    /// event as its message, any other as `[event]`. (Not `launchTask`: the launch handler runs
    /// on a background queue, so its records may come before the callback's acknowledgement.)
    private func timeline(_ host: HostSession, _ name: String = "XcodeTemplate") -> [String] {
        let shown: Set = [
            "willFinishLaunching", "didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground",
            "willEnterForeground", "willTerminate", "didReceiveMemoryWarning", "taskCompleted", "suspended",
        ]
        return host.allEvents.filter { $0.name == name }.compactMap { event in
            event.event == "log" ? event.detail : shown.contains(event.event) ? "[\(event.event)]" : nil
        }
    }

    /// What one callback shows: the delegate's record (if it logs one), then its notification's
    /// (posted after the delegate method returned, on the main thread), then the host's event
    /// (the callback's acknowledgement).
    private func callback(_ event: String, logged: String?, notification: String) -> [String] {
        (logged.map { [$0] } ?? []) + ["notification UIApplication\(notification)Notification main=true", "[\(event)]"]
    }

    private func launch(_ launches: Int) -> [String] {
        ["willFinishLaunching launches=\(launches)", "registered \(Self.identifier).refresh", "[willFinishLaunching]"]
            + callback("didFinishLaunching", logged: nil, notification: "DidFinishLaunching")
            + callback("didBecomeActive", logged: "applicationDidBecomeActive state=0", notification: "DidBecomeActive")
    }

    private func toTheBackground(save task: Int) -> [String] {
        callback("didEnterBackground", logged: "applicationDidEnterBackground", notification: "DidEnterBackground")
            + ["saved, background task \(task) ends"]
    }

    @Test func theXcodeTemplateRunsWithNotificationsAfterEachCallbackAndOsLogsAsLogEvents() throws {
        let scratch = try Scratch()
        let host = try launched(scratch)
        host.send("memory-warning XcodeTemplate")
        try host.waitFor("XcodeTemplate", "didReceiveMemoryWarning")
        host.send("home")
        try host.waitFor("XcodeTemplate", "suspended")
        host.send("run-task XcodeTemplate \(Self.identifier).refresh")
        try host.waitFor("XcodeTemplate", "suspended", occurrence: 2)
        host.send("terminate XcodeTemplate")
        try host.waitFor("XcodeTemplate", "terminated")

        let expected: [[String]] = [
            launch(1),
            callback("didReceiveMemoryWarning", logged: nil, notification: "DidReceiveMemoryWarning"),
            callback("willResignActive", logged: "applicationWillResignActive", notification: "WillResignActive"),
            toTheBackground(save: 1), ["[suspended]"],
            // Resumed in the background for the task (sequence 6).
            toTheBackground(save: 2), ["refresh ran, last save: saved in the background", "[taskCompleted]", "[suspended]"],
            // Terminated while suspended: no callback, no notification.
        ]
        #expect(timeline(host) == expected.flatMap { $0 })

        let logs = host.allEvents.filter { $0.name == "XcodeTemplate" && $0.event == "log" }
        #expect(logs.first?.fields["label"] as? String == "\(Self.identifier)/lifecycle")
        #expect(logs.first?.fields["level"] as? String == "info")
        #expect(logs.first { $0.detail?.hasPrefix("registered") == true }?.fields["label"] as? String == "\(Self.identifier)/tasks")
        #expect(logs.first { $0.detail?.hasPrefix("saved") == true }?.fields["level"] as? String == "notice", "Logger.notice is os's default type")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Xcode's template with its scene manifest (as Xcode writes it): the scene delegate is driven
    /// instead of the app delegate's foreground and background methods, each scene notification is
    /// posted after its scene-delegate method and UIApplication's after the scene's.
    @Test func withASceneManifestTheSceneLifeCycleApplies() throws {
        let scratch = try Scratch()
        let manifest: [String: Any] = [
            "UIApplicationSupportsMultipleScenes": false,
            "UISceneConfigurations": ["UIWindowSceneSessionRoleApplication": [[
                "UISceneConfigurationName": "Default Configuration",
                "UISceneDelegateClassName": "XcodeTemplateFixture.SceneDelegate",
            ]]],
        ]
        let app = try scratch.bundle("Scenic", from: "XcodeTemplate", changes: ["UIApplicationSceneManifest": manifest])
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor("Scenic", "didBecomeActive")
        host.send("home")
        try host.waitFor("Scenic", "suspended")
        host.closeInput()
        #expect(try host.waitForExit() == 0)

        func scene(_ name: String) -> String { "notification UIScene\(name)Notification scene=true" }
        func application(_ name: String) -> String { "notification UIApplication\(name)Notification main=true" }
        let expected: [[String]] = [
            ["willFinishLaunching launches=1", "registered \(Self.identifier).refresh", "[willFinishLaunching]"],
            [application("DidFinishLaunching"), "[didFinishLaunching]"],
            [scene("WillConnect"), scene("WillEnterForeground"), application("WillEnterForeground"),
             scene("DidActivate"), application("DidBecomeActive"), "[didBecomeActive]"],
            [scene("WillDeactivate"), application("WillResignActive"), "[willResignActive]"],
            // No applicationDidEnterBackground, so no background-task save.
            [scene("DidEnterBackground"), application("DidEnterBackground"), "[didEnterBackground]", "[suspended]"],
        ]
        #expect(timeline(host, "Scenic") == expected.flatMap { $0 })
        #expect(!host.allEvents.contains { $0.name == "Scenic" && $0.event == "warning" })
    }

    @Test func userDefaultsStandardPersistsToTheBundleIdentifiersPlistAcrossRelaunches() throws {
        let scratch = try Scratch()
        let host = try launched(scratch)
        host.send("home")
        try host.waitFor("XcodeTemplate", "suspended")
        host.send("open XcodeTemplate")
        try host.waitFor("XcodeTemplate", "didBecomeActive", occurrence: 2)
        host.send("terminate XcodeTemplate")
        try host.waitFor("XcodeTemplate", "terminated")
        host.send("open XcodeTemplate")
        try host.waitFor("XcodeTemplate", "didBecomeActive", occurrence: 3)
        host.closeInput()
        #expect(try host.waitForExit() == 0)

        let terminate = callback("willTerminate", logged: "applicationWillTerminate", notification: "WillTerminate")
        let expected: [[String]] = [
            callback("willEnterForeground", logged: "applicationWillEnterForeground", notification: "WillEnterForeground"),
            callback("didBecomeActive", logged: "applicationDidBecomeActive state=0", notification: "DidBecomeActive"),
            // The user's terminate goes through the app switcher: it resigns active first.
            callback("willResignActive", logged: "applicationWillResignActive", notification: "WillResignActive"),
            terminate,
            launch(2),  // UserDefaults.standard kept the count
            terminate,  // quit
        ]
        let timeline = timeline(host)
        let suspended = try #require(timeline.firstIndex(of: "[suspended]"))
        #expect(Array(timeline[(suspended + 1)...]) == expected.flatMap { $0 })

        let plist = try #require(scratch.containerFile(Self.identifier, "Library/Preferences/\(Self.identifier).plist"))
        let defaults = try #require(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
        #expect(defaults["launches"] as? Int == 2)
        #expect(defaults["lastSave"] as? String == "saved in the background")
        // Before: the domain was named after the process, apphost. (Read from a disk image, a
        // missing file is empty.)
        #expect(scratch.containerFile(Self.identifier, "Library/Preferences/apphost.plist")?.isEmpty ?? true)
    }
}
