public import Foundation
import Synchronization
import AppHostProtocol

/// The running app, as `UIApplication`: its state, its delegate, its windows and its background
/// time. There is one per app process: `Application.shared`.
///
/// Outside a host — in a unit test — `Application.shared` is a detached application that never
/// traps: its background tasks, BGTaskScheduler and completion handlers work, and nothing drives
/// its delegate. `DetachedApplication` makes one with a delegate and drives its callbacks.
@MainActor
public final class Application {
    /// The app's single instance. Outside a host: the detached application whose callback is
    /// running, else the one made last by `DetachedApplication`, else a bare detached one.
    public nonisolated static var shared: Application {
        if let driving = Detached.driving { return driving }
        if hostLink.isAttached { return hosted }
        return Detached.latestOrBare()
    }

    /// The app process's application, driven by its host.
    nonisolated static let hosted = Application(link: hostLink)

    /// The app's execution state. Raw values as UIKit's: active 0, inactive 1, background 2.
    public enum State: Int, Sendable, CustomStringConvertible {
        case active = 0
        case inactive = 1
        case background = 2

        /// The case's name, as Swift prints an enum. Spelled out: printing an enum without it
        /// reflects on it (`Mirror`), which cost 0.6 ms the first time in an app process.
        public var description: String {
            switch self {
            case .active: "active"
            case .inactive: "inactive"
            case .background: "background"
            }
        }
    }

    /// Where the app is in its life cycle. A suspended app runs no code, so it never sees that.
    public internal(set) var applicationState: State = .inactive

    /// The object the SDK created from Info.plist's `ApplicationDelegateClassName`.
    public internal(set) var delegate: (any ApplicationDelegateCallbacks)?

    /// The app's windows; visible ones make up its snapshot.
    public var windows: [Window] = []

    /// The scenes of an app that adopts them (Info.plist `UIApplicationSceneManifest`); nil for
    /// an app-delegate app.
    var scenes: SceneDriver?

    /// The scenes connected now, as `UIApplication.connectedScenes` (empty without scenes).
    public var connectedScenes: Set<Scene> { Set(scenes?.connectedScenes ?? []) }

    /// The app's scene sessions, connected or not, as `UIApplication.openSessions`.
    public var openSessions: Set<SceneSession> { Set(scenes?.sessions ?? []) }

    /// Whether the app supports several scenes at once (`UIApplicationSupportsMultipleScenes`).
    public var supportsMultipleScenes: Bool { scenes?.supportsMultipleScenes ?? false }

    /// The bundle's `CFBundleIdentifier`.
    public nonisolated var bundleIdentifier: String { link.configuration.bundleIdentifier }

    /// The app's container: Documents, Library and tmp live here, and Foundation's directory
    /// look-ups (`FileManager.urls(for:in:)`, `NSHomeDirectory()`, `NSTemporaryDirectory()`) resolve into it.
    public nonisolated var containerURL: URL { URL(fileURLWithPath: link.configuration.containerPath, isDirectory: true) }

    /// The bundle's Info.plist, read once (a detached application's is the one it was given).
    public internal(set) lazy var infoDictionary: [String: Any] = {
        let url = URL(fileURLWithPath: link.configuration.bundlePath).appendingPathComponent("Info.plist")
        guard let data = try? Data(contentsOf: url),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        else { return [:] }
        return plist
    }()

    private nonisolated let background = Mutex(BackgroundLedger())
    /// Where what the SDK tells the host goes: the control socket, or a detached observer.
    nonisolated let link: HostLink
    /// The app's `BGTaskScheduler.shared`.
    nonisolated let scheduler: BGTaskScheduler

    nonisolated init(link: HostLink) {
        self.link = link
        scheduler = BGTaskScheduler(link: link)
    }

    // MARK: Background time

    /// The background time left, in seconds: `Double.greatestFiniteMagnitude` in the foreground,
    /// an estimate of the grant's remaining time in the background. Safe from any thread.
    public nonisolated var backgroundTimeRemaining: TimeInterval {
        background.withLock { $0.remaining(now: .now) }
    }

    /// Asks for background time to finish a task, as UIKit's method of the same name.
    ///
    /// The time belongs to the app, not to the task: all of its tasks share one budget (30 s by
    /// default) that starts when the app enters the background. Shortly before it runs out, each
    /// open task's `expirationHandler` runs on the main queue; end every task by then, or the host
    /// terminates the app (0x2182bad2). Returns `.invalid` when no background time is left.
    /// Safe from any thread.
    public nonisolated func beginBackgroundTask(
        withName taskName: String?, expirationHandler handler: (@MainActor @Sendable () -> Void)?
    ) -> BackgroundTaskIdentifier {
        let identifier = background.withLock { ledger -> BackgroundTaskIdentifier in
            guard ledger.canBegin(now: .now) else { return .invalid }
            return ledger.open(name: taskName, expirationHandler: handler)
        }
        if identifier != .invalid {
            link.send(.taskBegan(id: UInt64(identifier.rawValue), name: taskName))
        }
        return identifier
    }

    /// `beginBackgroundTask(withName: nil, expirationHandler:)`.
    public nonisolated func beginBackgroundTask(
        expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        beginBackgroundTask(withName: nil, expirationHandler: handler)
    }

    /// Ends a background task. An unknown or already-ended identifier logs a warning naming it and
    /// is otherwise ignored (never a crash). Safe from any thread.
    public nonisolated func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let ended = background.withLock { $0.close(identifier) }
        if ended {
            link.send(.taskEnded(id: UInt64(identifier.rawValue)))
        } else {
            link.warn(
                "endBackgroundTask(_:) called with \(identifier), which is not an open background task; ignoring it"
            )
        }
    }

    // MARK: Background fetch

    /// The result of a background fetch or a background remote notification, as
    /// `UIBackgroundFetchResult`: newData 0, noData 1, failed 2.
    public enum BackgroundFetchResult: UInt, Sendable {
        case newData = 0
        case noData = 1
        case failed = 2
    }

    /// For `setMinimumBackgroundFetchInterval(_:)`: as often as the host allows (its policy's
    /// `minimumBackgroundFetchInterval`, 15 minutes by default).
    public nonisolated static let backgroundFetchIntervalMinimum: TimeInterval = 0
    /// For `setMinimumBackgroundFetchInterval(_:)`: no background fetch (the default).
    public nonisolated static let backgroundFetchIntervalNever: TimeInterval = .greatestFiniteMagnitude

    /// How long at least must pass between background fetches. Until an app calls this, it gets
    /// none; the host remembers the interval across launches and restarts. The app needs
    /// `fetch` in Info.plist `UIBackgroundModes`. Safe from any thread.
    public nonisolated func setMinimumBackgroundFetchInterval(_ minimumBackgroundFetchInterval: TimeInterval) {
        let interval = minimumBackgroundFetchInterval
        guard interval.isFinite, interval >= 0, interval < Application.backgroundFetchIntervalNever else {
            if interval == Application.backgroundFetchIntervalNever { link.send(.fetchInterval(nil)) } else {
                link.warn("setMinimumBackgroundFetchInterval(_:) called with \(interval), which is not a number of seconds; ignoring it")
            }
            return
        }
        link.send(.fetchInterval(interval))
    }

    // MARK: Driven by the host

    nonisolated func enterBackground(remaining: Double?) {
        background.withLock { $0.enterBackground(remaining: remaining, now: .now) }
    }

    nonisolated func enterForeground() {
        background.withLock { $0.enterForeground() }
    }

    /// Runs the expiration handlers of the given tasks (nil: every open one) that are still
    /// open, on the main actor.
    func expire(taskIDs: [UInt64]?, remaining: Double) {
        let handlers = background.withLock { ledger in
            ledger.expire(remaining: remaining, now: .now)
            return (taskIDs?.map { Int($0) } ?? ledger.openTaskIDs).compactMap { ledger.expirationHandler(of: $0) }
        }
        for handler in handlers { handler() }
    }

    /// The open background tasks' names (nil for a task begun without one), oldest first.
    nonisolated var openBackgroundTaskNames: [String?] {
        background.withLock { $0.openTaskNames }
    }

    /// The visible windows' content, which the host stores as the app's snapshot.
    func snapshot() -> String {
        if let scenes { return scenes.snapshot() }
        return windows.filter { !$0.isHidden }.map(\.content).joined(separator: "\n")
    }
}

/// The app's background tasks and budget, guarded by `Application.background`.
private struct BackgroundLedger {
    typealias Handler = @MainActor @Sendable () -> Void

    private var tasks: [Int: Handler?] = [:]
    private var names: [Int: String] = [:]
    private var nextIdentifier = 1
    private var inBackground = false
    private var deadline: ContinuousClock.Instant?
    private var expired = false

    func remaining(now: ContinuousClock.Instant) -> TimeInterval {
        guard inBackground else { return .greatestFiniteMagnitude }
        guard let deadline else { return 0 }
        let left = now.duration(to: deadline)
        return max(0, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
    }

    func canBegin(now: ContinuousClock.Instant) -> Bool {
        !inBackground || (!expired && remaining(now: now) > 0)
    }

    mutating func open(name: String?, expirationHandler: Handler?) -> BackgroundTaskIdentifier {
        let identifier = nextIdentifier
        nextIdentifier += 1
        tasks[identifier] = .some(expirationHandler)
        names[identifier] = name
        return BackgroundTaskIdentifier(rawValue: identifier)
    }

    mutating func close(_ identifier: BackgroundTaskIdentifier) -> Bool {
        names.removeValue(forKey: identifier.rawValue)
        return tasks.removeValue(forKey: identifier.rawValue) != nil
    }

    var openTaskIDs: [Int] { tasks.keys.sorted() }

    var openTaskNames: [String?] { openTaskIDs.map { names[$0] } }

    func expirationHandler(of identifier: Int) -> Handler? {
        tasks[identifier] ?? nil
    }

    mutating func enterBackground(remaining: Double?, now: ContinuousClock.Instant) {
        inBackground = true
        expired = false
        deadline = remaining.map { now + .milliseconds(Int64($0 * 1000)) }
    }

    mutating func enterForeground() {
        inBackground = false
        expired = false
        deadline = nil
    }

    mutating func expire(remaining: Double, now: ContinuousClock.Instant) {
        expired = true
        deadline = now + .milliseconds(Int64(remaining * 1000))
    }
}

extension Application.BackgroundFetchResult {
    /// The result's name on the wire and in the host's events.
    var name: String {
        switch self {
        case .newData: "newData"
        case .noData: "noData"
        case .failed: "failed"
        }
    }
}
