import Foundation
import Testing

/// Delegates written as public iOS projects write them (Tests/Fixtures/Delegates), each built
/// unchanged in its own fixture plugin, walked through a launch, the background, a
/// BGTaskScheduler task (where it registers one), the foreground and termination (README.md,
/// "Porting iOS code"): @UIApplicationMain, NSObject delegates, Apple's module names, the members
/// real delegates use, and the UI they set up, read back from the window's snapshot.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct UIKitCorpusTests {
    /// One delegate class of a fixture bundle and what its walk shows.
    struct Walk: CustomTestStringConvertible, Sendable {
        /// The fixture's bundle (its CFBundleName).
        var bundle: String
        /// The class to launch, if not the one Info.plist names; the bundle is copied with it.
        var delegate: String?
        /// A scene manifest taken away (the app-delegate life cycle), or not.
        var withoutScenes = false
        /// The task the walk runs (`run-task`), if the delegate registers one.
        var task: String?
        /// Lines the app prints or logs (os's records are log events), in any order.
        var says: [String] = []
        /// Warnings the SDK shows.
        var warns: [String] = []
        /// The snapshot taken when it first goes to the background.
        var snapshot: String?
        /// Host commands sent once it is first active (a setting it waits for).
        var commands: [String] = []
        /// The starts of the `notification` events the host publishes for it: each comes, no other does.
        var notifies: [String] = []

        var testDescription: String { "\(bundle) \(delegate ?? "AppDelegate")" }
    }

    static let walks: [Walk] = [
        // 1. @UIApplicationMain (Swift 5), with a window, a navigation controller, a refresh, value(forKey:).
        Walk(bundle: "Recipes", task: "com.example.recipes.refresh",
             says: [
                "Recipes launched 1 time(s), root UINavigationController", "Bundle com.example.recipes Recipes true Info.plist",
                "Recipes active, screen 390x844", "Recipes refreshed",
             ],
             snapshot: #"UINavigationController > RecipeListViewController "Recipes""#),
        Walk(bundle: "Recipes", delegate: "DelegatesLegacyMainFixture.PushAppDelegate",
             says: ["Device token: c132be5f3421b70b48ed5bf84de9f307ebf502bf3a3e76fcee999126627dc7c2"],
             notifies: ["registered for remote notifications: device token c132be5f3421b70b48ed5bf84de9f307ebf502bf3a3e76fcee999126627dc7c2"]),
        // @UIApplicationMain on an NSObject, with scenes; the app-delegate life cycle without them.
        Walk(bundle: "Gallery", task: "com.example.gallery.refresh",
             says: ["Gallery launched in state 1", "Gallery scene in the background after 1 visit(s)", "Gallery refreshed its albums"],
             snapshot: #"UINavigationController > AlbumsViewController "Albums""#),
        Walk(bundle: "Gallery", delegate: "DelegatesLegacyScenesFixture.MemoryAppDelegate", withoutScenes: true,
             says: ["Gallery saving", "Gallery emptied its cache"], snapshot: "UIViewController"),
        // 4. AVFoundation and os.log, PushKit, CallKit and AVFAudio, CoreLocation and OSLog.
        Walk(bundle: "Radio", says: ["Radio launched, category AVAudioSessionCategoryPlayback", "Radio in the background"]),
        Walk(bundle: "Radio", delegate: "DelegatesFrameworksFixture.CallAppDelegate",
             says: ["Calls ready, push types 1, complication PKPushTypeComplication"]),
        Walk(bundle: "Radio", delegate: "DelegatesFrameworksFixture.LocationAppDelegate"),
        // 2. NSObject delegates (Swift 6), UserNotifications.
        Walk(bundle: "Habits", says: ["Habits: notifications granted=true", "Habits launched", "Habits in the background"],
             commands: ["authorize Habits notifications granted"],
             notifies: ["asked for authorization; it is notDetermined (answer with authorize Habits notifications granted|denied)", "authorization granted"]),
        Walk(bundle: "Habits", delegate: "DelegatesAdaptorFixture.ReminderAppDelegate", task: "com.example.habits.refresh",
             says: ["ReminderAppDelegate created", "Habits: authorization status 0", "Habits: reminder scheduled"],
             notifies: ["kept \"daily-reminder\", due "]),
        // 7. Scenes whose windows are made in code (Swift 6), override init().
        Walk(bundle: "Notebook", task: "com.example.notebook.cleanup",
             says: ["Notebook delegate created", "Notebook cleaned up"], snapshot: #"UINavigationController > NotesViewController "Notes""#),
        Walk(bundle: "Tracker", task: "com.example.tracker.sync", says: ["Tracker launched", "Tracker synced"], snapshot: "UIViewController"),
        Walk(bundle: "Tracker", delegate: "DelegatesMainSwift6Fixture.SyncAppDelegate", task: "com.example.tracker.sync",
             says: ["Tracker processing ran", "Tracker: not permitted, code 3"]),
    ]

    @Test(arguments: walks)
    func walksThroughTheLifeCycle(_ walk: Walk) throws {
        let scratch = try Scratch()
        let source = Paths.apps.appendingPathComponent("\(walk.bundle).app")
        try Paths.requireBuilt(source)
        var name = walk.bundle
        var app = source
        if walk.delegate != nil || walk.withoutScenes {
            name = walk.bundle + "Variant"
            var changes: [String: Any?] = [:]
            if let delegate = walk.delegate { changes["ApplicationDelegateClassName"] = delegate }
            if walk.withoutScenes { changes["UIApplicationSceneManifest"] = .some(nil) }
            app = try scratch.bundle(name, from: walk.bundle, changes: changes)
        }
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor(name, "didBecomeActive")
        walk.commands.forEach(host.send)
        if walk.bundle == "Gallery" && walk.withoutScenes { host.send("memory-warning \(name)") }
        host.send("home")
        try host.waitFor(name, "suspended")
        if let task = walk.task {
            let before = host.allEvents.filter { $0.name == name && $0.event == "taskCompleted" }.count
            host.send("run-task \(name) \(task)")
            let completed = try host.waitFor(name, "taskCompleted", occurrence: before + 1)
            #expect(completed.detail == "\(task) success")
        }
        host.send("open \(name)")
        try host.waitFor(name, "didBecomeActive", occurrence: 2)
        host.send("terminate \(name)")
        try host.waitFor(name, "willTerminate")
        try host.waitFor(name, "terminated")
        for line in walk.says {
            if !host.allEvents.contains(where: { $0.name == name && $0.event == "log" && $0.detail == line }) {
                try host.waitForStandardError(containing: line)
            }
        }
        for warning in walk.warns {
            #expect(host.allEvents.contains { $0.name == name && $0.event == "warning" && $0.detail?.hasPrefix(warning) == true })
        }
        let notified = host.allEvents.filter { $0.name == name && $0.event == "notification" }.compactMap(\.detail)
        // Each expected event came, and no other (a request added again is kept again).
        #expect(walk.notifies.allSatisfy { start in notified.contains { $0.hasPrefix(start) } }, "\(notified)")
        #expect(notified.allSatisfy { detail in walk.notifies.contains { detail.hasPrefix($0) } }, "\(notified)")
        if let snapshot = walk.snapshot {
            #expect(host.allEvents.first { $0.name == name && $0.event == "snapshot" }?.detail == snapshot)
        }
        #expect(!host.allEvents.contains { $0.name == name && ["launchFailed", "crashed"].contains($0.event) })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
