import Foundation

// The messages of the control socket between the supervisor and an app process. Each is one
// frame (see Framing). Fields added later must be optional, so that old peers still decode.

/// The argument that makes apphost's binary run as an app process (`apphost __app-process`).
package let appProcessArgument = "__app-process"

/// The version both sides send first; a mismatch ends the connection with a clear error.
/// 2: the callback request and its ack have a compact form (CompactCoding.swift).
/// 3: the configuration carries the launch's callbacks, which the app runs once it is ready
/// without the host sending them (WireConfiguration.launchCallbacks).
/// 4: they may include the first didBecomeActive, which the app runs right after
/// didFinishLaunching unless the host withdrew it (`HostMessage.withdraw`, `AppMessage.ackThenNext`).
/// 5: a transfer carries its header fields and earliest begin date, a transfer event why the
/// system cancelled it, progress reaches a running app (`transferProgress`), and a launch's
/// scene sessions include those discarded while it was not running (`WireSceneSession.discarded`).
/// 6: a transfer may ask the app to authenticate (`WireTransferEvent.challenge`, answered by
/// `transferChallengeAnswered`), a cancelled or failed download carries resume data and a
/// transfer may go on from it, and a cancel may ask for resume data.
/// 7: user notifications (`AppMessage.notification`, `HostMessage.notification`: authorization,
/// requests kept and delivered by the host, taps, the device token).
/// 8: a server certificate to trust (`.serverTrust` challenges, `trustsServer` answers), what
/// `willPresent` answered and the app's notification categories, actions and text replies, the
/// delivered notifications (at launch and as they change).
package let wireProtocolVersion = 8

/// `applicationState` as the app observes it. Raw values as UIKit's.
package enum WireApplicationState: Int, Codable, Sendable {
    case active = 0
    case inactive = 1
    case background = 2
}

/// A delegate callback (or SDK request) the host asks the app to run on its main queue.
package enum WireCallback: String, Codable, Sendable, CaseIterable {
    case willFinishLaunching
    case didFinishLaunching
    case didBecomeActive
    case willResignActive
    case didEnterBackground
    case willEnterForeground
    case willTerminate
    case didReceiveMemoryWarning
    /// Background events (the request's `event` says which); each starts a piece of background
    /// work that the app ends by calling its completion handler or `setTaskCompleted(success:)`.
    case performFetch
    case didReceiveRemoteNotification
    case launchTask
    /// A PushKit VoIP push: the app must report an incoming call to CallKit before it returns.
    case didReceiveIncomingPush
    /// A significant location change woke or relaunched the app: its location managers that
    /// monitor significant changes get `locationManager(_:didUpdateLocations:)`.
    case didUpdateLocations
    /// A background URL session's transfers finished while the app was suspended or not
    /// running: `application(_:handleEventsForBackgroundURLSession:completionHandler:)`, then the
    /// session delegate's callbacks for the request's `event.transfers`.
    case handleEventsForBackgroundURLSession
    /// Not a delegate callback: the SDK answers with the app's window content.
    case snapshot
    /// Scene operations for an app that adopts scenes, on the request's `scene` session: connect
    /// it (or bring it back) to the foreground in place of the scene there (`open APP
    /// --new-scene` while the app is in the foreground), disconnect it (`close-scene`: the
    /// session is kept), or discard it (`discard-scene`: `application(_:didDiscardSceneSessions:)`).
    case connectScene
    case disconnectScene
    case discardScene

    /// The UIKit-style name people recognise, for event lines and reports.
    package var delegateMethodName: String {
        switch self {
        case .willFinishLaunching: "application(_:willFinishLaunchingWithOptions:)"
        case .didFinishLaunching: "application(_:didFinishLaunchingWithOptions:)"
        case .didBecomeActive: "applicationDidBecomeActive(_:)"
        case .willResignActive: "applicationWillResignActive(_:)"
        case .didEnterBackground: "applicationDidEnterBackground(_:)"
        case .willEnterForeground: "applicationWillEnterForeground(_:)"
        case .willTerminate: "applicationWillTerminate(_:)"
        case .didReceiveMemoryWarning: "applicationDidReceiveMemoryWarning(_:)"
        case .performFetch: "application(_:performFetchWithCompletionHandler:)"
        case .didReceiveRemoteNotification: "application(_:didReceiveRemoteNotification:fetchCompletionHandler:)"
        case .launchTask: "the BGTaskScheduler launch handler"
        case .didReceiveIncomingPush: "pushRegistry(_:didReceiveIncomingPushWith:for:completion:)"
        case .didUpdateLocations: "locationManager(_:didUpdateLocations:)"
        case .handleEventsForBackgroundURLSession: "application(_:handleEventsForBackgroundURLSession:completionHandler:)"
        case .snapshot: "snapshot"
        case .connectScene: "scene(_:willConnectTo:options:)"
        case .disconnectScene: "sceneDidDisconnect(_:)"
        case .discardScene: "application(_:didDiscardSceneSessions:)"
        }
    }
}

package struct WireCallbackRequest: Codable, Sendable, Equatable {
    package var id: UInt64
    package var callback: WireCallback
    /// `applicationState` while the callback runs.
    package var state: WireApplicationState
    /// `applicationState` once it has returned, when that differs.
    package var stateAfter: WireApplicationState?
    /// Background time left, in seconds, when the app is in the background.
    package var backgroundTimeRemaining: Double?
    /// For `performFetch`, `didReceiveRemoteNotification` and `launchTask`: the event.
    package var event: WireBackgroundEvent?
    /// For an app that adopts scenes: the session (its persistent identifier, which the host
    /// assigns) that a scene operation is about, or that `willEnterForeground` and
    /// `didBecomeActive` bring to the foreground (a new session if the app does not have it).
    package var scene: String?

    package init(
        id: UInt64, callback: WireCallback, state: WireApplicationState,
        stateAfter: WireApplicationState? = nil, backgroundTimeRemaining: Double? = nil,
        event: WireBackgroundEvent? = nil
    ) {
        self.event = event
        self.id = id
        self.callback = callback
        self.state = state
        self.stateAfter = stateAfter
        self.backgroundTimeRemaining = backgroundTimeRemaining
    }
}

/// Host to app.
package enum HostMessage: Codable, Sendable, Equatable {
    case configure(WireConfiguration)
    case callback(WireCallbackRequest)
    /// Run the expiration handlers of these background tasks now; `remaining` seconds are left.
    case expire(taskIDs: [UInt64], remaining: Double)
    /// Run the expiration handler of this BGTaskScheduler task (its work number) now.
    case expireWork(UInt64)
    /// A location update for the app's location managers that update (`didUpdateLocations`).
    case location(WireLocation)
    /// Location updates failed: `CLError.Code` raw value (1: denied).
    case locationFailed(code: Int)
    /// The app's location authorization changed (`authorizedAlways`, `authorizedWhenInUse`, `denied`, `notDetermined`).
    case locationAuthorization(String)
    /// The app's audio session was interrupted (a call, `audio-interrupt`), or the interruption
    /// ended: AVAudioSession.interruptionNotification with this type.
    case audioInterruption(began: Bool)
    /// A transfer of one of the app's background URL sessions finished while the app runs: the
    /// session delegate's callbacks, as they happen.
    case transferFinished(WireTransferEvent)
    /// A running transfer of the running app moved on: bytes received and sent so far, and
    /// expected in all (`didWriteData`, `didSendBodyData`); with `resumedAt`, a download went on
    /// from that byte with a Range request (`didResumeAtOffset`).
    case transferProgress(session: String, task: Int, received: Int64, sent: Int64, expected: Int64?, resumedAt: Int64? = nil)
    /// Do not run the configured callback `id` (the launch's didBecomeActive): the host wants
    /// another step after didFinishLaunching. Too late once the app has begun it, which its
    /// acknowledgement of didFinishLaunching says (`AppMessage.ackThenNext`).
    case withdraw(id: UInt64)
    /// User notifications: authorization, a notification presented or tapped, the device token.
    case notification(WireNotificationTell)
}

/// App to host.
package enum AppMessage: Codable, Sendable, Equatable {
    /// The runner's first frame.
    case hello(protocolVersion: Int, pid: Int32)
    /// The app process is confined. When `listener` is true this frame carries the seccomp
    /// listener descriptor (SCM_RIGHTS); `landlockABI` is 0 where the kernel has no Landlock;
    /// `seconds` is how long confining took.
    case sandboxed(listener: Bool, landlockABI: Int32, uid: UInt32, seconds: Double)
    /// The plugin is loaded and its delegate exists; callbacks may start.
    case ready(protocolVersion: Int)
    /// The app could not be started; `reason` is one line for the person running the host.
    case launchFailed(reason: String)
    /// A callback returned. `returned` carries a launching method's Bool, `snapshot` the window.
    case ack(id: UInt64, returned: Bool?, snapshot: String?)
    /// Callback `id` returned true, and the app runs the next callback its configuration carries
    /// now, the host not having withdrawn it: the launch's didBecomeActive after didFinishLaunching.
    case ackThenNext(id: UInt64)
    case taskBegan(id: UInt64, name: String?)
    case taskEnded(id: UInt64)
    /// Something the person running the host should see, e.g. a misuse of the SDK.
    case warning(String)
    /// `setMinimumBackgroundFetchInterval(_:)`, in seconds; nil: never.
    case fetchInterval(Double?)
    /// A completion handler was called, or `setTaskCompleted(success:)`: the work is done.
    /// `result` is a FetchResult name (`newData`, `noData`, `failed`) or `success`/`failure`.
    case workCompleted(id: UInt64, result: String)
    /// `BGTaskScheduler.register(forTaskWithIdentifier:using:launchHandler:)`.
    case registerTask(String)
    /// `BGTaskScheduler.submit(_:)`, already judged by the SDK; the host judges it again.
    case submitTask(WireTaskRequest)
    /// `cancel(taskRequestWithIdentifier:)`; nil: `cancelAllTaskRequests()`.
    case cancelTask(String?)
    /// The expiration handlers of these background tasks began (`returned` false) or all
    /// returned (true), on the main thread: the host's watchdog of expiration handlers.
    case expirationHandlers(taskIDs: [UInt64], returned: Bool)
    /// A swift-log record: its level (`trace` … `critical`), the logger's label, and the message
    /// with its metadata.
    case log(level: String, label: String, message: String)
    /// The app's audio: whether its AVAudioSession is active, and whether it plays (category
    /// playback, active, and a player playing). Sent when either changes.
    case audio(active: Bool, playing: Bool)
    /// What the app's location managers ask for together: standard updates, in the background
    /// too (`allowsBackgroundLocationUpdates`), and significant-change monitoring. Sent when it changes.
    case locationManager(updating: Bool, background: Bool, significant: Bool)
    /// `requestWhenInUseAuthorization()` or `requestAlwaysAuthorization()`.
    case requestLocationAuthorization(always: Bool)
    /// `CXProvider.reportNewIncomingCall(with:update:completion:)`: a call, by its UUID.
    case callReported(uuid: String)
    /// `CXProvider.reportCall(with:endedAt:reason:)`: the call ended.
    case callEnded(uuid: String)
    /// The restoration data of the app's scene sessions (`userInfo`, `stateRestorationActivity`),
    /// sent when it changed after a scene callback: the host keeps it for the next launch.
    case sceneSessions([WireSceneSession])
    /// A background URL session task was made and resumed (`resume()`): the host's transfer
    /// service carries it out.
    case transferCreated(WireTransfer)
    /// `cancel()` of a background URL session task; `producingResumeData`:
    /// `cancel(byProducingResumeData:)`, the host keeps a download's part file.
    case transferCancelled(session: String, task: Int, producingResumeData: Bool?)
    /// The delegate's answer to a transfer's authentication challenge: the transfer goes on with it.
    case transferChallengeAnswered(session: String, task: Int, answer: WireChallengeAnswer)
    /// The session delegate's callbacks for a finished transfer returned (the downloaded file
    /// was moved or is gone): the host forgets it; it is never delivered again.
    case transferDelivered(session: String, task: Int)
    /// User notifications: authorization asked for, requests added or removed, registration.
    case notification(WireNotificationAsk)
}

/// Coding of messages: JSON, one shared encoder and decoder per process, but for the messages
/// of a callback's round trip and of a launch, which have a compact or tagged form
/// (CompactCoding.swift).
package enum WireCoding {
    private static let encoder = JSONEncoder()
    private static let decoder = JSONDecoder()

    package static func encode(_ value: some Encodable) -> [UInt8] {
        encode(json: value)
    }

    package static func decode<Value: Decodable>(_ type: Value.Type, from body: [UInt8]) throws -> Value {
        try decode(json: type, from: body)
    }

    /// JSON, whatever the value (the compact forms are never used).
    package static func encode(json value: some Encodable) -> [UInt8] {
        // Encoding our own message types cannot fail: they hold only strings, numbers and Bools.
        Array((try? encoder.encode(value)) ?? Data())
    }

    package static func decode<Value: Decodable>(json type: Value.Type, from body: [UInt8]) throws -> Value {
        try decoder.decode(type, from: Data(body))
    }
}
