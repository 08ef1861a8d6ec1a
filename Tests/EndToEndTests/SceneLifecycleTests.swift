import Foundation
import Testing

/// README.md's scene sequences against real app processes: the Probe with a
/// UIApplicationSceneManifest naming its SceneDelegate. Each test checks what the app recorded
/// inside each callback (the scene's activationState, the app's applicationState) and the
/// notifications in the order they were posted.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SceneLifecycleTests {
    static var manifest: [String: Any] {
        [
        "UIApplicationSupportsMultipleScenes": false,
        "UISceneConfigurations": ["UIWindowSceneSessionRoleApplication": [[
            "UISceneConfigurationName": "Default Configuration",
            "UISceneDelegateClassName": "ProbeFixture.SceneDelegate",
        ]]],
        ]
    }

    /// A Probe that adopts scenes and records every notification.
    private func sceneApp(_ scratch: Scratch, _ name: String, behavior: [String: Any] = [:], multiple: Bool = false) throws -> URL {
        var manifest = Self.manifest
        manifest["UIApplicationSupportsMultipleScenes"] = multiple
        return try scratch.bundle(
            name, behavior: behavior.merging(["observeNotifications": true]) { $1 },
            changes: ["UIApplicationSceneManifest": manifest])
    }

    /// `scenes --json` now, for `name`'s `count` sessions: each as "SESSION STATE [front]".
    private func listScenes(_ host: HostSession, _ name: String, count: Int) throws -> [String] {
        func lines() -> [Event] { host.allEvents.filter { $0.event == "scene" && $0.name == name } }
        let before = lines().count
        host.send("scenes --json")
        try host.waitFor("a scenes listing of \(count)", occurrence: before + count) { $0.event == "scene" && $0.name == name }
        return lines().dropFirst(before).prefix(count).map {
            "\($0.fields["session"] as? String ?? "?") \($0.fields["state"] as? String ?? "?")\($0.fields["front"] as? Bool == true ? " front" : "")"
        }
    }

    /// What the app recorded after its first `count` records, without the main-thread marks.
    private func trail(_ scratch: Scratch, _ name: String, from count: Int) -> [String] {
        Array(scratch.recorded(name).dropFirst(count)).map { $0.replacingOccurrences(of: " main=true", with: "") }
    }

    private static let toTheForeground = [
        "notification UISceneWillEnterForegroundNotification", "notification UIApplicationWillEnterForegroundNotification",
        "sceneDidBecomeActive foregroundActive app=active",
        "notification UISceneDidActivateNotification", "notification UIApplicationDidBecomeActiveNotification",
    ]
    private static let resign = [
        "sceneWillResignActive foregroundActive app=active",
        "notification UISceneWillDeactivateNotification", "notification UIApplicationWillResignActiveNotification",
    ]

    @Test func launchHomeOpenAndTerminateDriveTheSceneNotTheAppDelegate() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Scenic", behavior: ["hideOnResign": "(hidden)"])], scratch: scratch)
        try host.waitFor("Scenic", "didBecomeActive")
        #expect(trail(scratch, "Scenic", from: 0) == [
            "launch reason=user remaining=max", "main bundle test.scenic Scenic Scenic.app",
            "willFinishLaunching inactive", "didFinishLaunching inactive", "notification UIApplicationDidFinishLaunchingNotification",
            "configurationForConnecting inactive",
            "willConnectTo unattached app=inactive", "notification UISceneWillConnectNotification",
            "sceneWillEnterForeground unattached app=inactive",
        ] + Self.toTheForeground)

        var seen = scratch.recorded("Scenic").count
        host.send("home")
        try host.waitFor("Scenic", "suspended")
        #expect(trail(scratch, "Scenic", from: seen) == Self.resign + [
            "sceneDidEnterBackground background app=background",
            "notification UISceneDidEnterBackgroundNotification", "notification UIApplicationDidEnterBackgroundNotification",
        ])
        // The snapshot is the scene's window, as sceneWillResignActive left it.
        let events = host.allEvents.filter { $0.name == "Scenic" }
        #expect(Array(events.map(\.event).suffix(4)) == ["willResignActive", "didEnterBackground", "snapshot", "suspended"])
        #expect(events.last { $0.event == "snapshot" }?.detail == "(hidden)")

        seen = scratch.recorded("Scenic").count
        host.send("open Scenic")
        try host.waitFor("Scenic", "didBecomeActive", occurrence: 2)
        #expect(trail(scratch, "Scenic", from: seen) == ["sceneWillEnterForeground background app=background"] + Self.toTheForeground)

        // Through the app switcher: the scene resigns, is disconnected, then the app terminates.
        seen = scratch.recorded("Scenic").count
        host.send("terminate Scenic")
        try host.waitFor("Scenic", "terminated")
        #expect(trail(scratch, "Scenic", from: seen) == Self.resign + [
            "sceneDidDisconnect foregroundInactive app=inactive", "notification UISceneDidDisconnectNotification",
            "willTerminate inactive", "notification UIApplicationWillTerminateNotification",
        ])
        // The app delegate's foreground and background methods were never called.
        let appDelegate = ["didBecomeActive", "willResignActive", "didEnterBackground", "willEnterForeground"]
        #expect(!scratch.callbacks("Scenic").contains { appDelegate.contains(String($0.split(separator: " ")[0])) })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func anInterruptionResignsAndReactivatesTheScene() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Called")], scratch: scratch)
        try host.waitFor("Called", "didBecomeActive")
        let seen = scratch.recorded("Called").count
        host.send("interrupt Called 0.3")
        try host.waitFor("Called", "didBecomeActive", occurrence: 2)
        #expect(trail(scratch, "Called", from: seen) == Self.resign + [
            "sceneDidBecomeActive foregroundActive app=active",
            "notification UISceneDidActivateNotification", "notification UIApplicationDidBecomeActiveNotification",
        ])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// A background launch connects no scene (as on iOS); opening the app later connects it.
    @Test func aBackgroundLaunchConnectsNoSceneUntilTheAppIsOpened() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Quietly")], scratch: scratch, arguments: ["--background"])
        try host.waitFor("Quietly", "suspended")
        #expect(trail(scratch, "Quietly", from: 0) == [
            "launch reason=background remaining=max", "main bundle test.quietly Quietly Quietly.app",
            "willFinishLaunching background", "didFinishLaunching background", "notification UIApplicationDidFinishLaunchingNotification",
            "notification UIApplicationDidEnterBackgroundNotification",
        ])
        let seen = scratch.recorded("Quietly").count
        host.send("open Quietly")
        try host.waitFor("Quietly", "didBecomeActive")
        #expect(trail(scratch, "Quietly", from: seen) == [
            "configurationForConnecting background",
            "willConnectTo unattached app=background", "notification UISceneWillConnectNotification",
            "sceneWillEnterForeground unattached app=background",
        ] + Self.toTheForeground)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Sequence 6 for a scene app: resumed into the background, its scene (already there) hears nothing.
    @Test func aSuspendedSceneAppWokenIntoTheBackgroundCallsNoScene() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Woken")], scratch: scratch)
        try host.waitFor("Woken", "didBecomeActive")
        host.send("home")
        try host.waitFor("Woken", "suspended")
        let seen = scratch.recorded("Woken").count
        host.send("wake Woken")
        try host.waitFor("Woken", "suspended", occurrence: 2)
        #expect(trail(scratch, "Woken", from: seen) == ["notification UIApplicationDidEnterBackgroundNotification"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Memory warnings stay with the app delegate; the host's own shutdown (`quit`) ends a running
    /// scene app with no app switcher: the active scene is disconnected, then applicationWillTerminate.
    @Test func memoryWarningsGoToTheAppDelegateAndQuitDisconnectsTheActiveScene() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Ended")], scratch: scratch)
        try host.waitFor("Ended", "didBecomeActive")
        let seen = scratch.recorded("Ended").count
        host.send("memory-warning Ended")
        try host.waitFor("Ended", "didReceiveMemoryWarning")
        host.send("quit")
        #expect(try host.waitForExit() == 0)
        #expect(trail(scratch, "Ended", from: seen) == [
            "didReceiveMemoryWarning active",
            "sceneDidDisconnect foregroundActive app=active", "notification UISceneDidDisconnectNotification",
            "willTerminate active", "notification UIApplicationWillTerminateNotification",
        ])
    }

    /// Several scenes: a new one in place of the one in the foreground, a background scene closed
    /// while the app is suspended (resumed for it), `open` bringing the last scene forward, a
    /// closed session discarded; what the host refuses, in one line each.
    @Test func severalScenesConnectCloseAndDiscard() throws {
        let scratch = try Scratch()
        let app = try sceneApp(scratch, "Multi", behavior: ["recordSceneSession": true], multiple: true)
        let single = try sceneApp(scratch, "Single")
        let host = try HostSession([app, single], scratch: scratch)
        try host.waitFor("Multi", "didBecomeActive")
        #expect(try listScenes(host, "Multi", count: 1) == ["1 foregroundActive front"])

        var seen = scratch.recorded("Multi").count
        host.send("open Multi --new-scene")
        let connected = try host.waitFor("Multi", "connectScene")
        #expect(connected.detail == "2")
        #expect(trail(scratch, "Multi", from: seen) == [
            "sceneWillResignActive #1 foregroundActive app=active",
            "notification UISceneWillDeactivateNotification", "notification UIApplicationWillResignActiveNotification",
            "configurationForConnecting inactive",
            "willConnectTo #2 unattached app=inactive", "notification UISceneWillConnectNotification",
            "sceneWillEnterForeground #2 unattached app=inactive", "notification UISceneWillEnterForegroundNotification",
            "sceneDidEnterBackground #1 background app=inactive", "notification UISceneDidEnterBackgroundNotification",
            "sceneDidBecomeActive #2 foregroundActive app=active",
            "notification UISceneDidActivateNotification", "notification UIApplicationDidBecomeActiveNotification",
        ])
        #expect(try listScenes(host, "Multi", count: 2) == ["1 background", "2 foregroundActive front"])

        host.send("home")
        try host.waitFor("Multi", "suspended")
        #expect(host.allEvents.last { $0.name == "Multi" && $0.event == "snapshot" }?.detail == "Probe scene 2", "the front scene's window")
        seen = scratch.recorded("Multi").count
        host.send("close-scene Multi 1")
        try host.waitFor("Multi", "disconnectScene")
        try host.waitFor("Multi", "suspended", occurrence: 2)
        #expect(trail(scratch, "Multi", from: seen) == [
            "notification UIApplicationDidEnterBackgroundNotification",
            "sceneDidDisconnect #1 background app=background", "notification UISceneDidDisconnectNotification",
        ])
        #expect(try listScenes(host, "Multi", count: 2) == ["1 unattached", "2 background front"])

        seen = scratch.recorded("Multi").count
        host.send("open Multi")
        try host.waitFor("Multi", "didBecomeActive", occurrence: 2)
        host.send("discard-scene Multi 1")
        try host.waitFor("Multi", "discardScene")
        #expect(trail(scratch, "Multi", from: seen) == [
            "sceneWillEnterForeground #2 background app=background",
            "notification UISceneWillEnterForegroundNotification", "notification UIApplicationWillEnterForegroundNotification",
            "sceneDidBecomeActive #2 foregroundActive app=active",
            "notification UISceneDidActivateNotification", "notification UIApplicationDidBecomeActiveNotification",
            "didDiscardSceneSessions 1 active",
        ])
        #expect(try listScenes(host, "Multi", count: 1) == ["2 foregroundActive front"])

        host.send("discard-scene Multi 2")
        try host.waitForStandardError(containing: "scene 2 is Multi's scene in the foreground; send the app home first (home) to discard it")
        host.send("close-scene Multi 7")
        try host.waitForStandardError(containing: "Multi has no scene session 7; its sessions: 2")
        host.send("open Single --new-scene")
        try host.waitForStandardError(
            containing: "Single does not support multiple scenes (UIApplicationSupportsMultipleScenes is false); open Single brings its scene forward")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Under memory pressure the host disconnects background scenes (sessions kept) before it
    /// ends the app, as iOS does: a suspended app is resumed for it, then ended after the grace.
    @Test func memoryPressureDisconnectsBackgroundScenesBeforeEndingTheApp() throws {
        let scratch = try Scratch()
        let app = try sceneApp(scratch, "Heavy", behavior: ["recordSceneSession": true], multiple: true)
        let host = try HostSession([app], scratch: scratch, arguments: ["--memory-warning-grace", "0.5"])
        try host.waitFor("Heavy", "didBecomeActive")
        host.send("open Heavy --new-scene")
        try host.waitFor("Heavy", "connectScene")
        host.send("home")
        try host.waitFor("Heavy", "suspended")
        let seen = scratch.recorded("Heavy").count
        host.send("memory-pressure")
        let pressure = try host.waitFor("memory pressure") { $0.event == "memoryPressure" }
        #expect(pressure.detail?.contains("; background scenes disconnected: Heavy (1, 2); ") == true)
        let ended = try host.waitFor("Heavy", "terminated")
        #expect(ended.kind == "vm-pageshortage")
        #expect(trail(scratch, "Heavy", from: seen) == [
            "notification UIApplicationDidEnterBackgroundNotification",
            "sceneDidDisconnect #1 background app=background", "notification UISceneDidDisconnectNotification",
            "sceneDidDisconnect #2 background app=background", "notification UISceneDidDisconnectNotification",
        ])
        let order = host.allEvents.filter { $0.name == "Heavy" }.map(\.event)
        let disconnects = order.indices.filter { order[$0] == "disconnectScene" }
        #expect(disconnects.count == 2)
        #expect(disconnects.allSatisfy { $0 < order.firstIndex(of: "terminated")! }, "disconnected before the app is ended")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.jetsam)
    }

    /// Scene sessions persist across host restarts in the state directory: the front session
    /// reconnects after the relaunch with its userInfo and stateRestorationActivity (and without
    /// configurationForConnecting, as UIKit asks only for new sessions); numbering goes on.
    @Test func sessionsAndTheirRestorationDataSurviveAHostRestart() throws {
        let scratch = try Scratch()
        let app = try sceneApp(scratch, "Keep", behavior: ["recordSceneSession": true, "restoreScenes": true], multiple: true)
        let first = try HostSession([app], scratch: scratch)
        try first.waitFor("Keep", "didBecomeActive")
        first.send("open Keep --new-scene")
        try first.waitFor("Keep", "connectScene")
        first.send("home")
        try first.waitFor("Keep", "suspended")
        first.closeInput()
        #expect(try first.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: scratch.stateDirectory.appendingPathComponent("scene-sessions.json").path))

        let seen = scratch.recorded("Keep").count
        let second = try HostSession([app], scratch: scratch)
        try second.waitFor("Keep", "didBecomeActive")
        let relaunch = trail(scratch, "Keep", from: seen).filter { !$0.hasPrefix("notification") && !$0.hasPrefix("launch") }
        #expect(relaunch == [
            "main bundle test.keep Keep Keep.app", "willFinishLaunching inactive", "didFinishLaunching inactive",
            "willConnectTo #2 unattached app=inactive",
            "restored #2 com.example.probe.viewing item=item-2 visits=1",
            "sceneWillEnterForeground #2 unattached app=inactive", "sceneDidBecomeActive #2 foregroundActive app=active",
        ])
        #expect(try listScenes(second, "Keep", count: 2) == ["1 unattached", "2 foregroundActive front"])
        second.send("open Keep --new-scene")
        #expect(try second.waitFor("Keep", "connectScene").detail == "3")
        second.closeInput()
        #expect(try second.waitForExit() == 0)
    }

    /// Removing an app from the switcher (a force quit) discards its scene sessions, as on iOS:
    /// the next launch is told (didDiscardSceneSessions, after didFinishLaunching and before any
    /// scene connects), asks for a new session's configuration and restores nothing.
    @Test func aForceQuitDiscardsTheScenesSessionsAndTheNextLaunchIsTold() throws {
        let scratch = try Scratch()
        let app = try sceneApp(scratch, "Swiped", behavior: ["recordSceneSession": true, "restoreScenes": true])
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor("Swiped", "didBecomeActive")
        host.send("home")
        try host.waitFor("Swiped", "suspended")
        host.send("terminate Swiped")
        try host.waitFor("Swiped", "terminated")
        let seen = scratch.recorded("Swiped").count
        host.send("open Swiped")
        try host.waitFor("Swiped", "didBecomeActive", occurrence: 2)
        let relaunch = trail(scratch, "Swiped", from: seen).filter { !$0.hasPrefix("notification") && !$0.hasPrefix("launch") && !$0.hasPrefix("main bundle") }
        #expect(Array(relaunch.prefix(5)) == [
            "willFinishLaunching inactive", "didFinishLaunching inactive", "didDiscardSceneSessions 1 inactive",
            "configurationForConnecting inactive", "willConnectTo #2 unattached app=inactive",
        ], "\(relaunch)")
        #expect(!relaunch.contains { $0.hasPrefix("restored") })
        #expect(try listScenes(host, "Swiped", count: 1) == ["2 foregroundActive front"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// `discard-scene` while the app is not running is remembered, across hosts: UIKit "calls this
    /// method the next time your app launches".
    @Test func aSessionDiscardedWhileTheAppIsNotRunningIsToldAtItsNextLaunch() throws {
        let scratch = try Scratch()
        let app = try sceneApp(scratch, "Later", behavior: ["recordSceneSession": true], multiple: true)
        let first = try HostSession([app], scratch: scratch)
        try first.waitFor("Later", "didBecomeActive")
        first.send("open Later --new-scene")
        try first.waitFor("Later", "connectScene")
        first.closeInput()
        #expect(try first.waitForExit() == 0)

        let second = try HostSession([try scratch.bundle("Front"), app], scratch: scratch)
        try second.waitFor("Front", "didBecomeActive")
        second.send("discard-scene Later 1")
        #expect(try listScenes(second, "Later", count: 1) == ["2 unattached front"])
        second.closeInput()
        #expect(try second.waitForExit() == 0)

        let seen = scratch.recorded("Later").count
        let third = try HostSession([app], scratch: scratch)
        try third.waitFor("Later", "didBecomeActive")
        let relaunch = trail(scratch, "Later", from: seen).filter { $0.hasPrefix("didDiscardSceneSessions") || $0.hasPrefix("willConnectTo") }
        #expect(relaunch == ["didDiscardSceneSessions 1 inactive", "willConnectTo #2 unattached app=inactive"])
        third.send("discard-scene Later 1")
        try third.waitForStandardError(containing: "Later has no scene session 1; its sessions: 2")
        third.closeInput()
        #expect(try third.waitForExit() == 0)
    }

    /// A configuration the manifest lacks: the scene connects without a delegate, and a warning says why.
    @Test func anUnknownConfigurationConnectsTheSceneWithoutADelegateAndWarns() throws {
        let scratch = try Scratch()
        let host = try HostSession([try sceneApp(scratch, "Astray", behavior: ["sceneConfiguration": "Other"])], scratch: scratch)
        let warning = try host.waitFor("Astray", "warning")
        #expect(warning.detail == "configurationForConnecting returned configuration Other, which Info.plist's UIApplicationSceneManifest does not have (it has Default Configuration); the scene connects without a delegate")
        try host.waitFor("Astray", "didBecomeActive")
        #expect(!scratch.callbacks("Astray").contains { $0.hasPrefix("scene") })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
