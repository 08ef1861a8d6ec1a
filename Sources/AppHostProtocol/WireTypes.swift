package import Foundation

// The values the control socket's messages carry (Messages.swift): what an app process is
// started with (WireConfiguration and its parts), and the background events, task requests,
// scene sessions and positions that cross it afterwards.

/// Sent by the host to the runner right after `hello`: everything the app process needs.
package struct WireConfiguration: Codable, Sendable, Equatable {
    package var protocolVersion: Int
    package var bundleIdentifier: String
    package var bundleName: String
    package var bundlePath: String
    package var pluginPath: String
    package var delegateClassName: String
    package var containerPath: String
    /// Why the app is launched: "user", "background", … (LaunchOptionsKey.launchReason).
    package var launchReason: String
    /// Capabilities the app keeps (requested by its bundle, allowed by the host); none if nil.
    package var capabilities: [String]?
    /// RLIMIT_NOFILE of the app process.
    package var openFileLimit: UInt64?
    /// For a launch by a remote notification: its payload (a JSON object), for the launch options.
    package var launchPayload: String?
    /// What BGTaskScheduler needs to judge a submission as the host will: the declared modes,
    /// the permitted identifiers, the app's pending requests, the limits, and whether background
    /// app refresh is available at all.
    package var backgroundTasks: WireBackgroundTasks?
    /// The sandbox: entitlements (SyscallProfile.Entitlement raw values), the app's own user on a
    /// root host, the directories it may write, and RLIMIT_NPROC where no pids cgroup limits it.
    package var sandbox: WireSandbox?
    /// The least level of the app's swift-log records that reach the host (`--log-level`); nil: info.
    package var logLevel: String?
    /// The app's location authorization on this host (see HostMessage.locationAuthorization); nil: notDetermined.
    package var locationAuthorization: String?
    /// Info.plist `UIApplicationSceneManifest` as the host validated it; nil: the app does not
    /// adopt scenes (the app-delegate life cycle applies).
    package var scenes: WireSceneManifest?
    /// The app's scene sessions the host keeps (across launches and hosts), with what the app
    /// last reported of each: given back to the SDK when the app launches.
    package var sceneSessions: [WireSceneSession]?
    /// The app's background URL session transfers the host carries on (running, waiting, or
    /// finished and not yet delivered): given back as tasks when the app makes each session.
    package var transfers: [WireTransfer]?
    /// The app's notifications in Notification Center, newest first (`getDeliveredNotifications`).
    package var deliveredNotifications: [WireDeliveredNotification]?
    /// The launch's callbacks, `willFinishLaunching` then `didFinishLaunching`, and for an
    /// app-delegate app launched to the foreground the first `didBecomeActive`, which the app
    /// runs as soon as it has sent `ready`, as if the host had sent each when it had the
    /// acknowledgement of the one before (a callback that returned false ends the launch: the
    /// app runs no more of them). The host takes each as sent then and does not send it: three
    /// round trips less on every launch's path. `didBecomeActive` runs only if the host has not
    /// withdrawn it by the time didFinishLaunching returns (`HostMessage.withdraw`); the
    /// acknowledgement says which (`AppMessage.ackThenNext`). Never with an event or a scene.
    package var launchCallbacks: [WireCallbackRequest]?

    package init(
        protocolVersion: Int = wireProtocolVersion, bundleIdentifier: String, bundleName: String,
        bundlePath: String, pluginPath: String, delegateClassName: String, containerPath: String,
        launchReason: String, capabilities: [String]? = nil, openFileLimit: UInt64? = nil,
        sandbox: WireSandbox? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.bundleIdentifier = bundleIdentifier
        self.bundleName = bundleName
        self.bundlePath = bundlePath
        self.pluginPath = pluginPath
        self.delegateClassName = delegateClassName
        self.containerPath = containerPath
        self.launchReason = launchReason
        self.capabilities = capabilities
        self.openFileLimit = openFileLimit
        self.sandbox = sandbox
    }
}

/// Info.plist `UIApplicationSceneManifest`, validated by the host (AppBundle).
package struct WireSceneManifest: Codable, Sendable, Equatable {
    /// One entry of `UISceneConfigurations`' application role.
    package struct Configuration: Codable, Sendable, Equatable {
        /// `UISceneConfigurationName`.
        package var name: String
        /// `UISceneDelegateClassName`, e.g. Notes.SceneDelegate.
        package var delegateClassName: String
        /// `UISceneClassName`; nil: UIWindowScene.
        package var sceneClassName: String?

        package init(name: String, delegateClassName: String, sceneClassName: String? = nil) {
            self.name = name
            self.delegateClassName = delegateClassName
            self.sceneClassName = sceneClassName
        }
    }

    /// `UIApplicationSupportsMultipleScenes`.
    package var supportsMultipleScenes: Bool
    /// `UISceneConfigurations` → `UIWindowSceneSessionRoleApplication`, in Info.plist's order.
    package var configurations: [Configuration]

    package init(supportsMultipleScenes: Bool, configurations: [Configuration]) {
        self.supportsMultipleScenes = supportsMultipleScenes
        self.configurations = configurations
    }
}

/// A scene session's restoration data, as the SDK reports it and the host keeps it.
package struct WireSceneSession: Codable, Sendable, Equatable {
    /// The session's persistent identifier, which the host made.
    package var identifier: String
    /// The name of its scene configuration.
    package var configuration: String?
    /// `UISceneSession.userInfo`, as a JSON object.
    package var userInfo: String?
    /// `stateRestorationActivity`: its `activityType`, and its `userInfo` as a JSON object.
    package var activityType: String?
    package var activityUserInfo: String?
    /// Discarded while the app was not running (a force quit, `discard-scene`): the app is told
    /// at this launch, `application(_:didDiscardSceneSessions:)`, and does not restore it.
    package var discarded: Bool?

    package init(
        identifier: String, configuration: String? = nil, userInfo: String? = nil, activityType: String? = nil,
        activityUserInfo: String? = nil
    ) {
        self.identifier = identifier
        self.configuration = configuration
        self.userInfo = userInfo
        self.activityType = activityType
        self.activityUserInfo = activityUserInfo
    }
}

/// The app's background-task situation when it starts (see WireConfiguration.backgroundTasks).
package struct WireBackgroundTasks: Codable, Sendable, Equatable {
    package var modes: [String]
    package var permittedIdentifiers: [String]
    package var pending: [WireTaskRequest]
    package var maximumPendingRefresh: Int
    package var maximumPendingProcessing: Int
    package var available: Bool

    package init(
        modes: [String], permittedIdentifiers: [String], pending: [WireTaskRequest],
        maximumPendingRefresh: Int, maximumPendingProcessing: Int, available: Bool
    ) {
        self.modes = modes
        self.permittedIdentifiers = permittedIdentifiers
        self.pending = pending
        self.maximumPendingRefresh = maximumPendingRefresh
        self.maximumPendingProcessing = maximumPendingProcessing
        self.available = available
    }
}

/// A BGTaskScheduler request: `BGAppRefreshTaskRequest` or `BGProcessingTaskRequest`.
package struct WireTaskRequest: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case appRefresh
        case processing
    }

    package var identifier: String
    package var kind: Kind
    /// Seconds since 1970; nil: as soon as possible.
    package var earliestBeginDate: Double?
    package var requiresNetworkConnectivity: Bool
    package var requiresExternalPower: Bool

    package init(
        identifier: String, kind: Kind, earliestBeginDate: Double? = nil,
        requiresNetworkConnectivity: Bool = false, requiresExternalPower: Bool = false
    ) {
        self.identifier = identifier
        self.kind = kind
        self.earliestBeginDate = earliestBeginDate
        self.requiresNetworkConnectivity = requiresNetworkConnectivity
        self.requiresExternalPower = requiresExternalPower
    }
}

/// A background event delivered to the app: what it is, and the number of the work it starts.
package struct WireBackgroundEvent: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case fetch
        case remoteNotification
        case appRefresh
        case processing
        /// A PushKit VoIP push; it starts no work to complete: the callback must report a call.
        case voipPush
        /// A significant location change (payload: a WireLocation's JSON); no work to complete.
        case significantLocationChange
        /// A background URL session's transfers finished (`transfers` says which).
        case backgroundURLSession
    }

    /// The host's number for this piece of work; the app's completion names it.
    package var work: UInt64
    package var kind: Kind
    /// A BGTaskScheduler task's identifier.
    package var taskIdentifier: String?
    /// A remote notification's payload, a JSON object.
    package var payload: String?
    /// A background URL session's identifier, and its finished transfers to deliver.
    package var urlSession: String?
    package var transfers: [WireTransferEvent]?

    package init(work: UInt64, kind: Kind, taskIdentifier: String? = nil, payload: String? = nil) {
        self.work = work
        self.kind = kind
        self.taskIdentifier = taskIdentifier
        self.payload = payload
    }
}

/// How the runner confines the app process (AppHostSandbox.Confinement).
package struct WireSandbox: Codable, Sendable, Equatable {
    package var entitlements: [String]
    package var uid: UInt32?
    package var gid: UInt32?
    package var groups: [UInt32]?
    /// Read-write for the app: its container and its app groups' containers.
    package var writablePaths: [String]
    package var processLimit: UInt64?
    /// Each entitled app group's shared container, by group identifier.
    package var groupContainers: [String: String]?
    /// The seccomp filter compiled by the supervisor for this process (classic BPF), and
    /// whether it sends refusals to a listener.
    package var filter: Data?
    package var filterNotifies: Bool?
    /// Read-only for the app besides the system directories: the host's library directories.
    package var readablePaths: [String]?
    /// The runner is in a PID and a mount namespace of the app's own, whose init isolates the
    /// file system (it hides the host's state directory but for `writablePaths` and the bundle,
    /// and makes every mount read-only but `writablePaths`): the runner waits for it.
    package var namespaced: Bool?

    package init(
        entitlements: [String], uid: UInt32? = nil, gid: UInt32? = nil, groups: [UInt32]? = nil, writablePaths: [String],
        processLimit: UInt64? = nil, groupContainers: [String: String]? = nil
    ) {
        self.groupContainers = groupContainers
        self.entitlements = entitlements
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.writablePaths = writablePaths
        self.processLimit = processLimit
    }
}

/// A position of the simulated device, as `CLLocation`: degrees and seconds since 1970.
package struct WireLocation: Codable, Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double
    package var timestamp: Double

    package init(latitude: Double, longitude: Double, timestamp: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.timestamp = timestamp
    }

    /// The great-circle distance between two positions in degrees, in metres (haversine, mean
    /// earth radius): the host's Coordinate and the SDK's CLLocation both measure with it.
    package static func distance(_ from: (latitude: Double, longitude: Double), _ to: (latitude: Double, longitude: Double)) -> Double {
        let radius = 6_371_008.8
        let φ1 = from.latitude * .pi / 180, φ2 = to.latitude * .pi / 180
        let Δφ = φ2 - φ1, Δλ = (to.longitude - from.longitude) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * radius * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}
