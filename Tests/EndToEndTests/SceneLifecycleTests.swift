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
    private func sceneApp(_ scratch: Scratch, _ name: String, behavior: [String: Any] = [:]) throws -> URL {
        try scratch.bundle(
            name, behavior: behavior.merging(["observeNotifications": true]) { $1 },
            changes: ["UIApplicationSceneManifest": Self.manifest])
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
            "launch reason=user remaining=max",
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
            "launch reason=background remaining=max",
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
