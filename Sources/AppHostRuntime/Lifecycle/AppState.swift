package import AppHostProtocol

/// An app's state as the person running the host sees it: in events, `wait APP STATE` and `ps`.
public enum AppState: String, Sendable, CaseIterable, Codable {
    case notRunning = "not-running"
    case launching
    case inactive
    case active
    case background
    case suspended
    case terminated
}

/// How an app is launched: to the foreground (sequence 1) or directly into the background (5).
public enum LaunchKind: Sendable, Equatable {
    case foreground
    case background
}

/// A background event for an app: a fetch, a remote notification, or a BGTaskScheduler task
/// (docs/lifecycle.md, "The life cycle", sequences 5 and 6).
package struct BackgroundEvent: Sendable, Equatable {
    package var kind: WireBackgroundEvent.Kind
    /// A task's identifier.
    package var taskIdentifier: String?
    /// A remote notification's payload (JSON).
    package var payload: String?
    /// A background URL session's identifier (its finished transfers are added when it is sent).
    package var urlSession: String?
    /// A processing task's conditions: it ends early when one stops holding.
    package var requiresExternalPower = false
    package var requiresNetworkConnectivity = false

    package init(
        kind: WireBackgroundEvent.Kind, taskIdentifier: String? = nil, payload: String? = nil,
        requiresExternalPower: Bool = false, requiresNetworkConnectivity: Bool = false, urlSession: String? = nil
    ) {
        self.urlSession = urlSession
        self.kind = kind
        self.taskIdentifier = taskIdentifier
        self.payload = payload
        self.requiresExternalPower = requiresExternalPower
        self.requiresNetworkConnectivity = requiresNetworkConnectivity
    }

    /// "background fetch", "remote notification", "BGAppRefreshTask com.example.refresh".
    package var label: String {
        switch kind {
        case .fetch: "background fetch"
        case .remoteNotification: "remote notification"
        case .appRefresh: "BGAppRefreshTask \(taskIdentifier ?? "?")"
        case .processing: "BGProcessingTask \(taskIdentifier ?? "?")"
        case .voipPush: "VoIP push"
        case .significantLocationChange: "significant location change"
        case .backgroundURLSession: "background URLSession \(urlSession ?? "?")"
        }
    }

    var isTask: Bool { kind == .appRefresh || kind == .processing }

    /// The launch reason of an app launched for it (`launching`'s detail, the app's launch
    /// options): "backgroundFetch", "backgroundTask", "remoteNotification"…
    package var launchReason: String {
        switch kind {
        case .fetch: "backgroundFetch"
        case .remoteNotification: "remoteNotification"
        case .appRefresh, .processing: "backgroundTask"
        case .voipPush: "voipPush"
        case .significantLocationChange: "location"
        case .backgroundURLSession: "backgroundURLSession"
        }
    }

    /// Whether it starts no work: its callback is all of it (a VoIP push, a location change).
    var isCallbackOnly: Bool { kind == .voipPush || kind == .significantLocationChange }

    /// The callback that delivers it.
    var callback: WireCallback {
        switch kind {
        case .fetch: .performFetch
        case .remoteNotification: .didReceiveRemoteNotification
        case .appRefresh, .processing: .launchTask
        case .voipPush: .didReceiveIncomingPush
        case .significantLocationChange: .didUpdateLocations
        case .backgroundURLSession: .handleEventsForBackgroundURLSession
        }
    }
}

/// One line of an app's life: a callback that returned, a state it entered, a task it began.
public struct LifecycleEvent: Sendable, Equatable {
    /// Stable names, listed in README.md: `launching`, `loaded`, `willFinishLaunching`, …
    public var name: EventName
    /// The app's state after the event.
    public var state: AppState
    public var detail: String?

    public init(name: EventName, state: AppState, detail: String? = nil) {
        self.name = name
        self.state = state
        self.detail = detail
    }
}

