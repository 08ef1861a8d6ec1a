import AppHostKit
import Foundation
import Synchronization
import Testing

/// A delegate that records each callback with the state it saw, and whether `Application.shared`
/// was its own application there.
@MainActor
final class RecordingDelegate: ApplicationDelegate {
    var calls: [String] = []
    var sharedWasOwn = true
    var launchOptions: [Application.LaunchOptionsKey: Any] = [:]
    var keepsTaskOpen = false
    var endsTaskLater = false
    var saveTask = BackgroundTaskIdentifier.invalid
    let observed = Observed()
    let window = Window()

    init() {}

    private func record(_ name: String, _ application: Application) {
        calls.append("\(name) \(application.applicationState)")
        if Application.shared !== application { sharedWasOwn = false }
    }

    func application(_ application: Application, willFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?) -> Bool {
        record("willFinishLaunching", application)
        return true
    }

    func application(_ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?) -> Bool {
        record("didFinishLaunching", application)
        self.launchOptions = launchOptions ?? [:]
        window.content = "Recorder: launched"
        window.makeKeyAndVisible()
        let observed = self.observed
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "test.refresh", using: nil) { task in
            observed.began(task.identifier, sharedIsScheduler: Application.shared.bundleIdentifier)
            // Work before the expiration handler is set: an expiration that comes meanwhile waits.
            // Busy 0.1 s (the app's work, the test's subject), not a wait for anything.
            if observed.setsExpirationHandlerLate { usleep(100_000) }
            task.expirationHandler = { task.setTaskCompleted(success: false) }
            if !observed.holdsTasks { task.setTaskCompleted(success: true) }
        }
        return true
    }

    func applicationDidBecomeActive(_ application: Application) { record("didBecomeActive", application) }
    func applicationWillResignActive(_ application: Application) { record("willResignActive", application) }
    func applicationWillEnterForeground(_ application: Application) { record("willEnterForeground", application) }
    func applicationWillTerminate(_ application: Application) { record("willTerminate", application) }
    func applicationDidReceiveMemoryWarning(_ application: Application) { record("didReceiveMemoryWarning", application) }

    func applicationDidEnterBackground(_ application: Application) {
        record("didEnterBackground", application)
        window.content = "Recorder: hidden"
        saveTask = application.beginBackgroundTask(withName: "Save") { [weak self] in
            MainActor.assumeIsolated { self?.endSave(expired: true) }
        }
        if endsTaskLater {
            DispatchQueue.main.async { MainActor.assumeIsolated { self.endSave(expired: false) } }
        } else if !keepsTaskOpen {
            endSave(expired: false)
        }
    }

    func endSave(expired: Bool) {
        guard saveTask != .invalid else { return }
        calls.append(expired ? "expired" : "saved")
        Application.shared.endBackgroundTask(saveTask)
        saveTask = .invalid
    }

    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void
    ) {
        record("performFetch", application)
        application.setMinimumBackgroundFetchInterval(3600)
        if !observed.holdsTasks { completionHandler(.newData) }
    }
}

/// What a launch handler, which runs on a queue of its own, saw.
final class Observed: Sendable {
    private let state = Mutex<(tasks: [String], identifiers: [String], holds: Bool, late: Bool)>(([], [], false, false))

    var holdsTasks: Bool {
        get { state.withLock { $0.holds } }
        set { state.withLock { $0.holds = newValue } }
    }

    /// The launch handler works 0.1 s before it sets its task's expiration handler.
    var setsExpirationHandlerLate: Bool {
        get { state.withLock { $0.late } }
        set { state.withLock { $0.late = newValue } }
    }

    func began(_ identifier: String, sharedIsScheduler bundleIdentifier: String) {
        state.withLock {
            $0.tasks.append(identifier)
            $0.identifiers.append(bundleIdentifier)
        }
    }

    var tasks: [String] { state.withLock { $0.tasks } }
    /// `Application.shared.bundleIdentifier` as each launch handler saw it.
    var sharedIdentifiers: [String] { state.withLock { $0.identifiers } }
}

@MainActor let recorderInfo: [String: Any] = [
    "CFBundleIdentifier": "test.recorder", "CFBundleName": "Recorder",
    "UIBackgroundModes": ["fetch"], "BGTaskSchedulerPermittedIdentifiers": ["test.refresh"],
    "AppHostEntitlements": ["com.apple.security.application-groups": ["group.test.shared"]],
]

/// Serialized: outside its callbacks (in a block the app dispatched to the main queue, say),
/// `Application.shared` is the detached application made last, so tests that rely on it must
/// not make theirs at the same time.
@MainActor
@Suite("Detached applications: the SDK outside a host", .serialized)
struct DetachedApplicationTests {
    // Regression: Application.shared's properties outside a host stopped the test runner with
    // "AppHostKit: the app is not running under apphost" (SIGILL). In a child process, so that
    // a trap would fail this test instead of ending the run.
    @Test("Application.shared outside a host never traps", .timeLimit(.minutes(1)))
    func sharedOutsideAHost() async {
        await #expect(processExitsWith: .success) {
            let application = Application.shared
            precondition(!application.bundleIdentifier.isEmpty)
            precondition(FileManager.default.fileExists(atPath: application.containerURL.appendingPathComponent("Documents").path))
            let task = application.beginBackgroundTask(withName: "work", expirationHandler: nil)
            precondition(task != .invalid)
            application.endBackgroundTask(task)
            application.endBackgroundTask(task)  // a warning, not a crash
            application.setMinimumBackgroundFetchInterval(Application.backgroundFetchIntervalMinimum)
            do {
                try BGTaskScheduler.shared.submit(BGAppRefreshTaskRequest(identifier: "x"))
                preconditionFailure("submit of an identifier not permitted must throw")
            } catch BGTaskScheduler.Error.notPermitted {
            } catch {
                preconditionFailure("\(error)")
            }
            _ = await MainActor.run { Application.shared.applicationState }
            _ = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.none")
        }
    }

    @Test("launch to the foreground: willFinishLaunching, didFinishLaunching, didBecomeActive")
    func foregroundLaunch() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        #expect(app.launch())
        #expect(app.delegate.calls == ["willFinishLaunching inactive", "didFinishLaunching inactive", "didBecomeActive active"])
        #expect(app.state == .active)
        #expect(app.delegate.launchOptions[.launchReason] as? Application.LaunchReason == .user)
        #expect(app.delegate.sharedWasOwn)
        #expect(app.snapshot == "Recorder: launched")
        #expect(app.application.bundleIdentifier == "test.recorder")
        #expect(app.registeredTaskIdentifiers == ["test.refresh"])
        #expect(app.terminationReason == nil)
    }

    @Test("launch into the background: no didBecomeActive, didEnterBackground with background time")
    func backgroundLaunch() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo, backgroundTime: .seconds(10))
        #expect(app.launch(.backgroundFetch))
        #expect(app.delegate.calls == ["willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background", "saved"])
        #expect(app.delegate.launchOptions[.launchReason] as? Application.LaunchReason == .backgroundFetch)
        #expect(app.application.backgroundTimeRemaining <= 10 && app.application.backgroundTimeRemaining > 9)
    }

    @Test("home, interruption, back, memory warning, termination: the host's order and states")
    func transitions() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        app.resignActive()
        app.becomeActive()
        app.enterBackground()
        #expect(app.state == .background)
        #expect(app.snapshot == "Recorder: hidden")
        app.enterForeground()
        app.receiveMemoryWarning()
        app.terminate()
        #expect(Array(app.delegate.calls.dropFirst(3)) == [
            "willResignActive active", "didBecomeActive active",
            "willResignActive active", "didEnterBackground background", "saved",
            "willEnterForeground background", "didBecomeActive active",
            "didReceiveMemoryWarning active", "willTerminate active",
        ])
        #expect(app.application.backgroundTimeRemaining == .greatestFiniteMagnitude)
    }

    @Test("a background task stays open until the test expires the background time; its handler runs")
    func expiration() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.delegate.keepsTaskOpen = true
        app.launch()
        app.enterBackground()
        #expect(app.openBackgroundTasks == ["Save"])
        app.expireBackgroundTime()
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(app.delegate.calls.last == "expired")
        #expect(app.application.backgroundTimeRemaining == 0)
        // No new background time once it has expired, as under a host.
        #expect(app.application.beginBackgroundTask(expirationHandler: nil) == .invalid)
        app.application.endBackgroundTask(BackgroundTaskIdentifier(rawValue: 99))
        #expect(app.warnings == ["endBackgroundTask(_:) called with BackgroundTaskIdentifier(99), which is not an open background task; ignoring it"])
    }

    @Test("waiting for background tasks: the main queue runs what the app dispatched; one never ended times out", .timeLimit(.minutes(1)))
    func waitForBackgroundTasks() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.delegate.endsTaskLater = true
        app.launch()
        app.enterBackground()
        #expect(app.openBackgroundTasks == ["Save"])
        try await app.waitForBackgroundTasks()
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(app.delegate.calls.last == "saved")

        app.delegate.endsTaskLater = false
        app.delegate.keepsTaskOpen = true
        app.enterForeground()
        app.enterBackground()
        let error = await #expect(throws: DetachedApplicationError.self) { try await app.waitForBackgroundTasks(timeout: .milliseconds(100)) }
        #expect(error?.message == #"background tasks still open after 0.1 seconds: "Save""#)
    }

    @Test("a BGTaskScheduler task runs its launch handler, as this app's, and completes", .timeLimit(.minutes(1)))
    func runTask() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        try BGTaskScheduler.shared.submit(BGAppRefreshTaskRequest(identifier: "test.refresh"))
        #expect(app.pendingTaskRequests.map(\.identifier) == ["test.refresh"])
        #expect(try await app.runTask("test.refresh"))
        #expect(app.pendingTaskRequests.isEmpty)
        #expect(app.delegate.observed.tasks == ["test.refresh"])
        #expect(app.delegate.observed.sharedIdentifiers == ["test.recorder"])
    }

    @Test("expiring a running task runs its expiration handler", .timeLimit(.minutes(1)))
    func expireTask() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.delegate.observed.holdsTasks = true
        app.launch()
        let task = try app.startTask("test.refresh")
        #expect(task is BGAppRefreshTask)
        app.expire(task)
        #expect(try await app.completion(of: task) == false)
    }

    /// The launch handler runs on a queue of its own (registered with none: a global one), so the
    /// host may end the task before the handler has set its expiration handler: the expiration
    /// is kept, and the handler called once it is set (it was lost, and the task never completed).
    @Test("an expiration that comes while the launch handler runs reaches the expiration handler it sets", .timeLimit(.minutes(1)))
    func expireWhileTheLaunchHandlerRuns() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.delegate.observed.holdsTasks = true
        app.delegate.observed.setsExpirationHandlerLate = true
        app.launch()
        let task = try app.startTask("test.refresh")
        app.expire(task)
        #expect(try await app.completion(of: task, timeout: .seconds(5)) == false)
    }

    @Test("starting a task nobody registered says which are", .timeLimit(.minutes(1)))
    func unregisteredTask() throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        let error = try #require(throws: DetachedApplicationError.self) { try app.startTask("test.other") }
        #expect(error.code == .noLaunchHandler)
        #expect(error.message.hasPrefix("no launch handler is registered for test.other (registered: test.refresh)"))
    }

    @Test("registering a launch handler after launching fails and names what the host would do, without hanging")
    func lateRegistration() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        #expect(!BGTaskScheduler.shared.register(forTaskWithIdentifier: "test.refresh", using: nil) { _ in })
        #expect(app.terminationReason?.hasPrefix("registered a launch handler for test.refresh twice") == true)
    }

    @Test("a background fetch returns what the app passes to its completion handler", .timeLimit(.minutes(1)))
    func fetch() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        app.enterBackground()
        #expect(try await app.performFetch() == .newData)
        #expect(app.minimumBackgroundFetchInterval == 3600)
        #expect(app.delegate.calls.last == "performFetch background")
    }

    @Test("a completion handler never called times out with a message naming it", .timeLimit(.minutes(1)))
    func fetchTimeout() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.delegate.observed.holdsTasks = true
        app.launch()
        let error = await #expect(throws: DetachedApplicationError.self) { try await app.performFetch(timeout: .milliseconds(100)) }
        #expect(error?.code == .timeout)
        #expect(error?.message == "the completion handler of application(_:performFetchWithCompletionHandler:) was not called within 0.1 seconds")
    }

    @Test("a delegate without a notification method answers noData with a warning", .timeLimit(.minutes(1)))
    func defaultNotification() async throws {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        app.launch()
        #expect(try await app.receiveRemoteNotification(["aps": ["content-available": 1]]) == .noData)
        #expect(app.warnings.count == 1)
        #expect(app.warnings.first?.hasPrefix("the app declares the remote-notification background mode but its delegate does not implement") == true)
    }

    @Test("containers: a temporary one with the host's directories, removed with the app; entitled app groups")
    func containers() throws {
        var container: URL?
        do {
            let app = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
            container = app.application.containerURL
            for directory in ["Documents", "Library/Caches", "tmp"] {
                #expect(FileManager.default.fileExists(atPath: app.application.containerURL.appendingPathComponent(directory).path))
            }
            let group = try #require(app.application.containerURL(forApplicationGroup: "group.test.shared"))
            #expect(FileManager.default.fileExists(atPath: group.path))
            #expect(app.application.containerURL(forApplicationGroup: "group.other") == nil)
        }
        #expect(!FileManager.default.fileExists(atPath: try #require(container).path))
    }

    @Test("two detached applications at once: each callback sees its own Application.shared")
    func twoAtOnce() {
        let first = DetachedApplication<RecordingDelegate>(infoDictionary: recorderInfo)
        let second = DetachedApplication<RecordingDelegate>(infoDictionary: ["CFBundleIdentifier": "test.second"])
        first.launch()
        second.launch()
        first.enterBackground()
        #expect(first.delegate.sharedWasOwn && second.delegate.sharedWasOwn)
        #expect(second.application.bundleIdentifier == "test.second")
        // The second was made last: outside callbacks, it is Application.shared.
        #expect(Application.shared === second.application)
    }
}

/// A scene delegate that records each callback with the scene's and the app's state.
@MainActor
final class RecordingSceneDelegate: WindowSceneDelegate {
    static var calls: [String] = []
    var window: Window?

    init() {}

    private func record(_ name: String, _ scene: Scene) {
        Self.calls.append("\(name) \(scene.activationState) \(Application.shared.applicationState)")
    }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions) {
        record("willConnectTo", scene)
        window = Window(windowScene: scene as! WindowScene)
        window?.content = "Scene \(session.configuration.name ?? "?")"
    }

    func sceneDidDisconnect(_ scene: Scene) { record("sceneDidDisconnect", scene) }
    func sceneWillEnterForeground(_ scene: Scene) { record("sceneWillEnterForeground", scene) }
    func sceneDidBecomeActive(_ scene: Scene) { record("sceneDidBecomeActive", scene) }
    func sceneWillResignActive(_ scene: Scene) { record("sceneWillResignActive", scene) }
    func sceneDidEnterBackground(_ scene: Scene) { record("sceneDidEnterBackground", scene) }
}

@MainActor
@Suite("Detached applications with scenes", .serialized)
struct DetachedSceneTests {
    private func info(_ manifest: Any) -> [String: Any] {
        recorderInfo.merging(["UIApplicationSceneManifest": manifest]) { $1 }
    }

    private let manifest: [String: Any] = [
        "UISceneConfigurations": ["UIWindowSceneSessionRoleApplication": [[
            "UISceneConfigurationName": "Main", "UISceneDelegateClassName": "AppHostKitTests.RecordingSceneDelegate",
        ]]],
    ]

    @Test("an app that adopts scenes: its scene delegate instead of the app delegate's foreground and background methods")
    func sceneLifeCycle() {
        RecordingSceneDelegate.calls = []
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: info(manifest))
        #expect(app.launch())
        #expect(app.application.connectedScenes.count == 1)
        #expect(app.application.openSessions.first?.configuration.name == "Main")
        app.enterBackground()
        #expect(app.snapshot == "Scene Main", "the scene's window, not the app delegate's")
        app.enterForeground()
        app.terminate()
        #expect(app.delegate.calls == ["willFinishLaunching inactive", "didFinishLaunching inactive", "willTerminate active"])
        #expect(RecordingSceneDelegate.calls == [
            "willConnectTo unattached inactive", "sceneWillEnterForeground unattached inactive", "sceneDidBecomeActive foregroundActive active",
            "sceneWillResignActive foregroundActive active", "sceneDidEnterBackground background background",
            "sceneWillEnterForeground background background", "sceneDidBecomeActive foregroundActive active",
            "sceneDidDisconnect foregroundActive active",
        ])
        #expect(app.application.connectedScenes.isEmpty)
        #expect(app.application.openSessions.count == 1, "termination keeps the session")
        #expect(app.warnings.isEmpty)
    }

    @Test("a bad manifest: a warning with the host's refusal, and the app-delegate life cycle")
    func badManifest() {
        let app = DetachedApplication<RecordingDelegate>(infoDictionary: info(["UIApplicationSupportsMultipleScenes": "yes"]))
        #expect(app.launch())
        #expect(app.delegate.calls.last == "didBecomeActive active")
        #expect(app.warnings == [
            "Info.plist: UIApplicationSceneManifest UIApplicationSupportsMultipleScenes must be a Boolean; the app-delegate life cycle applies",
        ])
    }
}
