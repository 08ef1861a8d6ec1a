#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import Synchronization
import AppHostProtocol
import AppHostSystem

// Outside a host — a unit test of an app's own package — there is no host to drive the
// delegate and nothing to tell. `Application.shared` is then a detached application: it never
// traps, background tasks, BGTaskScheduler and completion handlers work as under a host, and what
// the SDK would have told the host is recorded. `DetachedApplication` makes one with a delegate
// and drives its callbacks in the order of README.md's "The life cycle", as the host would.

/// Which detached application `Application.shared` is outside a host.
@usableFromInline
enum Detached {
    /// The detached application whose callback, expiration handler or task is running: each
    /// test's own, even when tests run in parallel.
    @TaskLocal static var driving: Application?

    private struct Weak: @unchecked Sendable {
        weak var application: Application?
    }

    private static let latest = Mutex(Weak())
    private static let bare = Mutex<Application?>(nil)

    /// Makes `application` what `Application.shared` answers outside its callbacks.
    static func makeLatest(_ application: Application) {
        latest.withLock { $0.application = application }
    }

    /// The detached application made last that is still alive, else a bare one: no delegate, a
    /// temporary container, no background modes.
    static func latestOrBare() -> Application {
        if let application = latest.withLock({ $0.application }) { return application }
        return bare.withLock { bare in
            if let bare { return bare }
            let container = bareContainer
            makeContainer(at: URL(fileURLWithPath: container))
            atexit { try? FileManager.default.removeItem(atPath: Detached.bareContainer) }
            let configuration = WireConfiguration(
                bundleIdentifier: "app.detached", bundleName: "Detached", bundlePath: "", pluginPath: "", delegateClassName: "",
                containerPath: container, launchReason: "user")
            let application = Application(link: HostLink(detached: configuration) { _ in })
            bare = application
            return application
        }
    }

    /// The bare detached application's container, removed when the process exits.
    private static var bareContainer: String { NSTemporaryDirectory() + "apphost-detached-\(getpid())" }

    /// A new `Delegate`, made as the host makes the class Info.plist names (`ClassInstantiation`).
    @MainActor
    @usableFromInline
    static func instance<Delegate: ApplicationDelegateCallbacks>(of _: Delegate.Type) -> Delegate {
        guard let delegate = ClassInstantiation.make(Delegate.self as AnyClass) as? Delegate else {
            preconditionFailure(
                "DetachedApplication cannot create \(Delegate.self): subclass UIResponder or NSObject, conform to ApplicationDelegate, or pass delegate:")
        }
        return delegate
    }

    /// Documents, Library (Caches, Preferences, Application Support) and tmp, as the host makes them.
    static func makeContainer(at url: URL) {
        for directory in ["Documents", "Library/Caches", "Library/Preferences", "Library/Application Support", "tmp"] {
            try? FileManager.default.createDirectory(at: url.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
    }
}

/// An app's delegate driven by a unit test instead of a host, in the order the host would drive
/// it (docs/lifecycle.md, "The life cycle"), in the test's own process.
///
///     @MainActor @Test func savesWhenItGoesToTheBackground() throws {
///         let app = try DetachedApplication(infoPlist: infoPlistURL)   // AppDelegate()
///         app.launch()                                  // willFinish…, didFinish…, didBecomeActive
///         app.enterBackground()                         // willResignActive, didEnterBackground
///         #expect(app.openBackgroundTasks == ["Save"])
///         app.expireBackgroundTime()                    // the expiration handlers run now
///         #expect(app.openBackgroundTasks.isEmpty)
///     }
///
/// Each callback runs synchronously, on the main actor: mark the tests `@MainActor`. After each
/// life-cycle method returns, UIKit's notification is posted (`Application.didBecomeActiveNotification`,
/// …), as in the app process. While a callback, an expiration handler or a BGTaskScheduler
/// launch handler runs, `Application.shared` and `BGTaskScheduler.shared` are this application's, even with tests running in parallel;
/// elsewhere (a test's own code, a block the app dispatched to a queue) they are the detached
/// application made last — so a suite whose app uses `Application.shared` from such blocks
/// runs its tests one at a time (`@Suite(.serialized)`). Nothing is confined and no process is
/// started: for the real thing, with budgets, suspension and reports, use `TestHost` from
/// AppHostTesting.
///
/// The app's container is a temporary directory of its own (Documents, Library, tmp), removed
/// when this is released, unless a `containerURL` is given; `Application.containerURL` names it.
/// Foundation's directory look-ups (`FileManager.urls(for:in:)`, `NSHomeDirectory()`) answer
/// with it, and `Bundle.main`'s Info.plist values are the app's (`infoDictionary`), as in its
/// app process: a unit test never writes the real `~/Documents`. Both are the process's, so they
/// belong to the detached application made last that is still alive (`NSTemporaryDirectory()`
/// stays the test process's own temporary directory).
@MainActor
public final class DetachedApplication<Delegate: ApplicationDelegateCallbacks> {
    /// The application the delegate is given, with its state, windows and background tasks.
    public let application: Application
    /// The delegate, created before anything else, as the host creates it.
    public let delegate: Delegate

    let recorder: DetachedRecorder
    private let temporary: TemporaryDirectory
    private let backgroundTime: Duration
    private var nextWork: UInt64 = 1

    /// Makes the application and its delegate; nothing is called yet (`launch` does).
    ///
    /// `infoDictionary` stands for the bundle's Info.plist: its `CFBundleIdentifier`,
    /// `CFBundleName`, `UIBackgroundModes`, `BGTaskSchedulerPermittedIdentifiers` and app groups
    /// (`AppHostEntitlements` → `com.apple.security.application-groups`) count as under a host.
    /// `backgroundTime` is what `backgroundTimeRemaining` starts from in the background (the
    /// policy's 30 s by default).
    public init(
        delegate makeDelegate: @autoclosure () -> Delegate = Detached.instance(of: Delegate.self), infoDictionary: [String: Any] = [:], containerURL: URL? = nil,
        backgroundTime: Duration = .seconds(30)
    ) {
        let temporary = TemporaryDirectory()
        let container = containerURL ?? temporary.url.appendingPathComponent("Container", isDirectory: true)
        Detached.makeContainer(at: container)
        let entitlements = infoDictionary["AppHostEntitlements"] as? [String: Any]
        let groups = entitlements?["com.apple.security.application-groups"] as? [String] ?? []
        var groupContainers: [String: String] = [:]
        for group in groups {
            let url = temporary.url.appendingPathComponent("AppGroups/\(group)", isDirectory: true)
            try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            groupContainers[group] = url.path
        }
        let name = infoDictionary["CFBundleName"] as? String ?? "\(Delegate.self)"
        var configuration = WireConfiguration(
            bundleIdentifier: infoDictionary["CFBundleIdentifier"] as? String ?? "app.detached.\(name.lowercased())",
            bundleName: name, bundlePath: "", pluginPath: "", delegateClassName: String(reflecting: Delegate.self),
            containerPath: container.path, launchReason: "user",
            sandbox: WireSandbox(entitlements: [], writablePaths: [container.path] + groupContainers.values.sorted(), groupContainers: groupContainers))
        configuration.backgroundTasks = WireBackgroundTasks(
            modes: infoDictionary["UIBackgroundModes"] as? [String] ?? [],
            permittedIdentifiers: infoDictionary["BGTaskSchedulerPermittedIdentifiers"] as? [String] ?? [],
            pending: [], maximumPendingRefresh: 1, maximumPendingProcessing: 10, available: true)
        var refusal: String?
        if let manifest = infoDictionary["UIApplicationSceneManifest"] {
            do throws(SceneManifestError) {
                configuration.scenes = try WireSceneManifest(infoPlistValue: manifest, module: name)
            } catch {
                refusal = error.description
            }
        }

        let recorder = DetachedRecorder()
        let application = Application(link: HostLink(detached: configuration) { recorder.record($0) })
        application.infoDictionary = infoDictionary
        if let manifest = configuration.scenes { application.scenes = SceneDriver(manifest: manifest, link: application.link) }
        // A host would refuse the bundle; here the app-delegate life cycle applies, and a warning says why.
        if let refusal { application.link.warn("Info.plist: \(refusal); the app-delegate life cycle applies") }
        self.recorder = recorder
        self.temporary = temporary
        self.backgroundTime = backgroundTime
        self.application = application
        Detached.makeLatest(application)
        // Before the delegate is made: its initializer may ask for a directory or a value.
        DetachedWorld.enter(ObjectIdentifier(application), container: container.path, infoDictionary: infoDictionary)
        delegate = Detached.$driving.withValue(application) { makeDelegate() }
        application.delegate = delegate
    }

    deinit {
        // Before the temporary container goes (with the stored properties, after this).
        DetachedWorld.leave(ObjectIdentifier(application))
    }

    /// `init(delegate:infoDictionary:…)` with the dictionary of an Info.plist file, such as the
    /// app's own beside its sources.
    public convenience init(
        delegate makeDelegate: @autoclosure () -> Delegate = Detached.instance(of: Delegate.self), infoPlist: URL, containerURL: URL? = nil, backgroundTime: Duration = .seconds(30)
    ) throws {
        let data = try Data(contentsOf: infoPlist)
        guard let dictionary = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw DetachedApplicationError("\(infoPlist.path) does not hold a dictionary", code: .badInfoPlist)
        }
        self.init(delegate: makeDelegate(), infoDictionary: dictionary, containerURL: containerURL, backgroundTime: backgroundTime)
    }

    // MARK: The life cycle

    /// The application's state, as its delegate sees it.
    public var state: Application.State { application.applicationState }

    /// Launches the app: `application(_:willFinishLaunchingWithOptions:)` and
    /// `application(_:didFinishLaunchingWithOptions:)`, then, for the user (`.user`),
    /// `applicationDidBecomeActive` (sequence 1), or for any other reason
    /// `applicationDidEnterBackground` (sequence 5). The options hold `.launchReason` and what
    /// `options` adds (e.g. `.remoteNotification`). Returns false, having stopped there, if a
    /// launching method returned false (the host would end the app with `launch-failed`).
    @discardableResult
    public func launch(_ reason: Application.LaunchReason = .user, options: [Application.LaunchOptionsKey: Any] = [:]) -> Bool {
        var launchOptions = options
        launchOptions[.launchReason] = reason
        if reason == .location { launchOptions[.location] = true }
        let launchState: Application.State = reason == .user ? .inactive : .background
        let willFinish = drive(launchState) { $0.application(application, willFinishLaunchingWithOptions: launchOptions) }
        guard willFinish else { return false }
        let didFinish = drive(launchState, posting: .didFinishLaunching, launchOptions: launchOptions) {
            $0.application(application, didFinishLaunchingWithOptions: launchOptions)
        }
        application.scheduler.launchFinished.store(true, ordering: .releasing)
        recorder.finishLaunching()
        guard didFinish else { return false }
        if reason == .user {
            transition(.active, posting: .didBecomeActive) { $0.applicationDidBecomeActive(application) }
        } else {
            application.enterBackground(remaining: backgroundTime.seconds)
            transition(.background, posting: .didEnterBackground) { $0.applicationDidEnterBackground(application) }
        }
        return true
    }

    /// An interruption begins (an alert, a call): `applicationWillResignActive`; the state
    /// becomes `.inactive` (sequence 4).
    public func resignActive() {
        transition(.active, after: .inactive, posting: .willResignActive) { $0.applicationWillResignActive(application) }
    }

    /// `applicationDidBecomeActive`: the end of an interruption; the state becomes `.active`.
    public func becomeActive() {
        transition(.active, posting: .didBecomeActive) { $0.applicationDidBecomeActive(application) }
    }

    /// To the background, as `home` does (sequence 2): `applicationWillResignActive` if the app
    /// is active, then `applicationDidEnterBackground`, with `backgroundTime` to run background
    /// tasks in. Nothing is suspended: see what the app holds with `openBackgroundTasks`.
    public func enterBackground() {
        if state == .active { resignActive() }
        application.enterBackground(remaining: backgroundTime.seconds)
        transition(.background, posting: .didEnterBackground) { $0.applicationDidEnterBackground(application) }
    }

    /// Back to the foreground (sequence 3): `applicationWillEnterForeground` if the app is in
    /// the background, then `applicationDidBecomeActive`.
    public func enterForeground() {
        if state == .background {
            application.enterForeground()
            transition(.background, after: .inactive, posting: .willEnterForeground) { $0.applicationWillEnterForeground(application) }
        }
        becomeActive()
    }

    /// `applicationWillTerminate`, as the host ends a running app (sequence 7).
    public func terminate() {
        transition(state, posting: .willTerminate) { $0.applicationWillTerminate(application) }
    }

    /// `applicationDidReceiveMemoryWarning`.
    public func receiveMemoryWarning() {
        drive(state, posting: .didReceiveMemoryWarning) { $0.applicationDidReceiveMemoryWarning(application) }
    }

    // MARK: Background time

    /// The names of the open background tasks (nil for one begun without a name), oldest first.
    public var openBackgroundTasks: [String?] { application.openBackgroundTaskNames }

    /// Waits until the app has ended every background task it began — when the host would
    /// suspend it — while the main actor runs what the app dispatched to it. Throws if tasks
    /// are still open after `timeout`, naming them.
    public func waitForBackgroundTasks(timeout: Duration = .seconds(30)) async throws {
        guard await recorder.tasksEnded(within: timeout) else {
            let open = openBackgroundTasks.map { $0.map { "\"\($0)\"" } ?? "unnamed" }.joined(separator: ", ")
            throw DetachedApplicationError("background tasks still open after \(timeout): \(open)", code: .timeout)
        }
    }

    /// Ends the background time now, as the host's `expire APP` does: the expiration handler of
    /// every open background task runs, at once, and `backgroundTimeRemaining` is 0.
    public func expireBackgroundTime() {
        Detached.$driving.withValue(application) { application.expire(taskIDs: nil, remaining: 0) }
    }

    // MARK: What the host would have seen

    /// The SDK's warnings, as the host's `warning` events would show them: an unknown
    /// `endBackgroundTask` identifier, a completion handler called twice…
    public var warnings: [String] { recorder.snapshot.warnings }

    /// Set when the app did what the host terminates an app for at once: registering a
    /// BGTaskScheduler launch handler twice, or after launching. Nil otherwise.
    public var terminationReason: String? { recorder.snapshot.terminationReason }

    /// The visible windows' content: what the host's snapshot would show now.
    public var snapshot: String { application.snapshot() }

    // MARK: Helpers

    /// An app-level transition: for an app that adopts scenes (its Info.plist declares
    /// `UIApplicationSceneManifest`) its scenes stand in for the app delegate's method, as in the
    /// app process (docs/lifecycle.md, "Scenes").
    private func transition(
        _ state: Application.State, after: Application.State? = nil, posting callback: WireCallback, _ method: (Delegate) -> Void
    ) {
        drive(state, after: after, posting: callback) { delegate in
            if application.scenes?.run(callback, target: nil, application, delegate) != true { method(delegate) }
        }
    }

    /// Runs `body` with the delegate as its callback: the state set first (and `after` it), and
    /// `Application.shared` this application while it runs; then posts the notification UIKit
    /// posts after `posting`, as the host's app process does.
    @discardableResult
    func drive<Result>(
        _ state: Application.State, after: Application.State? = nil, posting callback: WireCallback? = nil,
        launchOptions: [Application.LaunchOptionsKey: Any] = [:], _ body: (Delegate) -> Result
    ) -> Result {
        application.applicationState = state
        let result = Detached.$driving.withValue(application) { () -> Result in
            let result = body(delegate)
            // As in the app process: a launching method that returned false posts nothing.
            if let callback, result as? Bool != false { application.postNotification(after: callback, launchOptions: launchOptions) }
            return result
        }
        if let after { application.applicationState = after }
        return result
    }

    func takeWork() -> UInt64 {
        defer { nextWork += 1 }
        return nextWork
    }

    func fetchResult(_ name: String) throws -> Application.BackgroundFetchResult {
        [Application.BackgroundFetchResult.newData, .noData, .failed].first { $0.name == name } ?? .failed
    }
}

/// Why a `DetachedApplication` could not do what a test asked: a struct with a code and one line.
public struct DetachedApplicationError: Error, CustomStringConvertible, Equatable {
    /// What went wrong; an open set.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. "timeout".
        public let rawValue: String
        /// A completion handler or `setTaskCompleted(success:)` was not called in time.
        public static let timeout = Code(rawValue: "timeout")
        /// `startTask` named an identifier with no launch handler.
        public static let noLaunchHandler = Code(rawValue: "no-launch-handler")
        /// The Info.plist given could not be read as a dictionary.
        public static let badInfoPlist = Code(rawValue: "bad-info-plist")
        /// The code's name.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// One line for the person reading the test's failure.
    public let message: String

    init(_ message: String, code: Code) {
        self.message = message
        self.code = code
    }

    /// The message.
    public var description: String { message }
}
