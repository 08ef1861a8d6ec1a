extension Application {
    /// A key of the launch options dictionary, as `UIApplication.LaunchOptionsKey`.
    public struct LaunchOptionsKey: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Why the app was launched: a `LaunchReason`.
        public static let launchReason = LaunchOptionsKey(rawValue: "launchReason")
        /// For a launch by a background (content-available) remote notification: its payload,
        /// `[AnyHashable: Any]`, as UIKit's key of the same name.
        public static let remoteNotification = LaunchOptionsKey(rawValue: "remoteNotification")
        /// For a relaunch by a significant location change (`LaunchReason.location`): `true`, as
        /// UIKit's key: the app starts its location manager again to receive it.
        public static let location = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsLocationKey")

        // UIKit's other keys, so that delegates that look them up compile; apphost launches an app
        // for none of these, so none is ever present.
        public static let url = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsURLKey")
        public static let sourceApplication = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsSourceApplicationKey")
        public static let annotation = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsAnnotationKey")
        public static let localNotification = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsLocalNotificationKey")
        public static let userActivityDictionary = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsUserActivityDictionaryKey")
        public static let userActivityType = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsUserActivityTypeKey")
        public static let shortcutItem = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsShortcutItemKey")
        public static let bluetoothCentrals = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsBluetoothCentralsKey")
        public static let bluetoothPeripherals = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsBluetoothPeripheralsKey")
        public static let cloudKitShareMetadata = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsCloudKitShareMetadataKey")
        public static let newsstandDownloads = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsNewsstandDownloadsKey")
    }

    /// Why the host launched the app. An open set: new reasons arrive with new background modes.
    public struct LaunchReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The user opened the app; it comes to the foreground.
        public static let user = LaunchReason(rawValue: "user")
        /// The host launched the app directly into the background (`apphost launch --background`).
        public static let background = LaunchReason(rawValue: "background")
        /// Launched into the background for `application(_:performFetchWithCompletionHandler:)`.
        public static let backgroundFetch = LaunchReason(rawValue: "backgroundFetch")
        /// Launched into the background for a content-available remote notification; the
        /// payload is under `.remoteNotification`.
        public static let remoteNotification = LaunchReason(rawValue: "remoteNotification")
        /// Launched into the background to run a BGTaskScheduler task.
        public static let backgroundTask = LaunchReason(rawValue: "backgroundTask")
        /// Launched into the background for a PushKit VoIP push.
        public static let voipPush = LaunchReason(rawValue: "voipPush")
        /// Relaunched into the background for a significant location change, as UIKit's
        /// `UIApplication.LaunchOptionsKey.location`: the app starts its location manager again
        /// to receive it.
        public static let location = LaunchReason(rawValue: "location")
        /// Launched into the background because a background URL session's transfers finished:
        /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)` follows.
        public static let backgroundURLSession = LaunchReason(rawValue: "backgroundURLSession")

        public var description: String { rawValue }
    }
}
