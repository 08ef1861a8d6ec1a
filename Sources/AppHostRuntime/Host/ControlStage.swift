import AppHostProtocol

/// Where an app process is in its conversation with the host. Each message from the app is
/// accepted only in the stages where it means something (`ControlStage.accepts`); anything else
/// is a protocol violation that ends the app, never trusted input. The rest of the protocol's
/// rules for a frame (its descriptors, its fields, its texts' limits) are `admit`'s, in
/// ControlStage+Admission.swift.
enum ControlStage: Equatable {
    /// Spawned: the runner's `hello` comes first.
    case awaitingHello
    /// The runner has the configuration and confines itself; `sandboxed` (the only message that
    /// may carry a descriptor, the seccomp listener) comes next.
    case confining
    /// Confined: the runner loads the plugin; the SDK says `ready`.
    case loading
    /// The delegate exists; callbacks run.
    case running

    /// What the app is doing in this stage, for a violation's reason.
    var activity: String {
        switch self {
        case .awaitingHello: "before its hello"
        case .confining: "while being confined"
        case .loading: "while its plugin was loading"
        case .running: "while running"
        }
    }

    /// The control protocol's table: whether the host accepts `message` in this stage. (A
    /// switch, not a set per message: it runs for every acknowledgement on the wire.)
    func accepts(_ message: AppMessage) -> Bool {
        switch message {
        case .hello: self == .awaitingHello
        case .sandboxed: self == .confining
        case .ready: self == .loading
        // The runner fails before the plugin runs; the SDK before the delegate exists.
        case .launchFailed: self == .confining || self == .loading
        case .warning, .log: self == .loading || self == .running
        case .ack, .ackThenNext, .taskBegan, .taskEnded, .expirationHandlers, .fetchInterval, .workCompleted, .registerTask, .submitTask, .cancelTask,
             .audio, .callReported, .callEnded, .locationManager, .requestLocationAuthorization, .sceneSessions,
             .transferCreated, .transferCancelled, .transferDelivered, .transferChallengeAnswered, .notification:
            self == .running
        }
    }

    /// The stage after `message` was accepted in this one.
    func after(_ message: AppMessage) -> ControlStage {
        switch message {
        case .hello: .confining
        case .sandboxed: .loading
        case .ready: .running
        default: self
        }
    }
}

extension AppMessage {
    /// The message's name on the wire, for violations and logs.
    var name: String {
        switch self {
        case .hello: "hello"
        case .sandboxed: "sandboxed"
        case .ready: "ready"
        case .launchFailed: "launchFailed"
        case .ack: "ack"
        case .ackThenNext: "ackThenNext"
        case .taskBegan: "taskBegan"
        case .taskEnded: "taskEnded"
        case .warning: "warning"
        case .log: "log"
        case .expirationHandlers: "expirationHandlers"
        case .fetchInterval: "fetchInterval"
        case .workCompleted: "workCompleted"
        case .registerTask: "registerTask"
        case .submitTask: "submitTask"
        case .cancelTask: "cancelTask"
        case .audio: "audio"
        case .callReported: "callReported"
        case .callEnded: "callEnded"
        case .locationManager: "locationManager"
        case .requestLocationAuthorization: "requestLocationAuthorization"
        case .sceneSessions: "sceneSessions"
        case .transferCreated: "transferCreated"
        case .transferCancelled: "transferCancelled"
        case .transferDelivered: "transferDelivered"
        case .transferChallengeAnswered: "transferChallengeAnswered"
        case .notification: "notification"
        }
    }
}
