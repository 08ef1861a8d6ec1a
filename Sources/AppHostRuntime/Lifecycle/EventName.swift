import AppHostProtocol

/// The name of an event in the host's stream (`launching`, `didBecomeActive`, `terminated`…),
/// as README.md lists them. An open set: new names may be added, so match the static members.
public struct EventName: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// A delegate callback that returned: `didBecomeActive`, `didEnterBackground`…
    init(_ callback: WireCallback) { rawValue = callback.rawValue }

    /// Whether the event is a callback's return (timed from the request to the acknowledgement).
    var isCallback: Bool { WireCallback(rawValue: rawValue) != nil }

    public static let launching = EventName(rawValue: "launching")
    /// The host's launcher changed: the launch template ended (apps launch by exec meanwhile)
    /// or was started again.
    public static let launcher = EventName(rawValue: "launcher")
    public static let loaded = EventName(rawValue: "loaded")
    // Delegate callbacks that returned (the names of WireCallback).
    public static let willFinishLaunching = EventName(rawValue: "willFinishLaunching")
    public static let didFinishLaunching = EventName(rawValue: "didFinishLaunching")
    public static let didBecomeActive = EventName(rawValue: "didBecomeActive")
    public static let willResignActive = EventName(rawValue: "willResignActive")
    public static let didEnterBackground = EventName(rawValue: "didEnterBackground")
    public static let willEnterForeground = EventName(rawValue: "willEnterForeground")
    public static let willTerminate = EventName(rawValue: "willTerminate")
    public static let didReceiveMemoryWarning = EventName(rawValue: "didReceiveMemoryWarning")
    public static let performFetch = EventName(rawValue: "performFetch")
    public static let didReceiveRemoteNotification = EventName(rawValue: "didReceiveRemoteNotification")
    public static let launchTask = EventName(rawValue: "launchTask")
    public static let didReceiveIncomingPush = EventName(rawValue: "didReceiveIncomingPush")
    public static let didUpdateLocations = EventName(rawValue: "didUpdateLocations")
    public static let handleEventsForBackgroundURLSession = EventName(rawValue: "handleEventsForBackgroundURLSession")
    // Continuous background modes: what the app does that may keep it running.
    /// The app's audio started or stopped playing, or was interrupted.
    public static let audio = EventName(rawValue: "audio")
    /// A CallKit call reported or ended.
    public static let call = EventName(rawValue: "call")
    /// Location: updates started or stopped, a position delivered, authorization changed.
    public static let location = EventName(rawValue: "location")
    /// User notifications: authorization asked for or set, a request kept, removed, delivered
    /// or tapped, a device token handed out.
    public static let notification = EventName(rawValue: "notification")
    // The life cycle.
    public static let interrupted = EventName(rawValue: "interrupted")
    /// The app switcher opened over the app (`switcher`, or a user's `terminate` of the active app).
    public static let switcher = EventName(rawValue: "switcher")
    public static let snapshot = EventName(rawValue: "snapshot")
    public static let suspended = EventName(rawValue: "suspended")
    public static let resumed = EventName(rawValue: "resumed")
    public static let terminated = EventName(rawValue: "terminated")
    // Background time and work.
    public static let backgroundTaskBegan = EventName(rawValue: "backgroundTaskBegan")
    public static let backgroundTaskEnded = EventName(rawValue: "backgroundTaskEnded")
    public static let expiration = EventName(rawValue: "expiration")
    public static let taskExpired = EventName(rawValue: "taskExpired")
    public static let fetchCompleted = EventName(rawValue: "fetchCompleted")
    public static let notificationCompleted = EventName(rawValue: "notificationCompleted")
    public static let taskCompleted = EventName(rawValue: "taskCompleted")
    public static let taskSubmitted = EventName(rawValue: "taskSubmitted")
    public static let taskCancelled = EventName(rawValue: "taskCancelled")
    public static let fetchInterval = EventName(rawValue: "fetchInterval")
    /// The app called the completion handler of `handleEventsForBackgroundURLSession`.
    public static let urlSessionEventsCompleted = EventName(rawValue: "urlSessionEventsCompleted")
    /// A background transfer changed: created, started, waiting, finished, delivered, cancelled.
    public static let transfer = EventName(rawValue: "transfer")
    // Triggers: what a command or the scheduler did.
    public static let fetch = EventName(rawValue: "fetch")
    public static let runTask = EventName(rawValue: "runTask")
    public static let expire = EventName(rawValue: "expire")
    public static let push = EventName(rawValue: "push")
    public static let voipPush = EventName(rawValue: "voipPush")
    public static let scheduler = EventName(rawValue: "scheduler")
    public static let conditions = EventName(rawValue: "conditions")
    public static let advance = EventName(rawValue: "advance")
    // The sandbox and resources.
    public static let sandboxed = EventName(rawValue: "sandboxed")
    public static let violation = EventName(rawValue: "violation")
    public static let memoryPressure = EventName(rawValue: "memoryPressure")
    /// A container's storage set up (a file system made or mounted, with its cost).
    public static let storage = EventName(rawValue: "storage")
    /// What `storage-pressure` did to one app: purged (and how much), ended, or left alone.
    public static let storagePressure = EventName(rawValue: "storagePressure")
    /// A swift-log record of the app's (AppHostKit's log handler).
    public static let log = EventName(rawValue: "log")
    // The host.
    public static let started = EventName(rawValue: "started")
    public static let warning = EventName(rawValue: "warning")
    // Listings (`ps`, `tasks` with --json).
    public static let ps = EventName(rawValue: "ps")
    public static let task = EventName(rawValue: "task")
    /// The scheduler's clock, listed by `tasks`.
    public static let clock = EventName(rawValue: "clock")
    /// A scene session, listed by `scenes`.
    public static let scene = EventName(rawValue: "scene")
}
