public import Foundation

/// What `ps` shows of one app. Encodable as `ps --json` prints it: one object per app, with
/// `event` "ps", the time, durations in seconds and sizes in bytes.
public struct AppStatus: Sendable, Equatable, Encodable {
    public var name: String
    public var identifier: String
    public var pid: Int32?
    public var state: AppState
    public var timeInState: Duration
    public var openBackgroundTasks: Int
    /// The continuous modes that keep it running in the background now (audio playing, location
    /// updating in the background, a call), each declared in its UIBackgroundModes.
    public var keptRunningBy: [ContinuousMode] = []
    public var backgroundTimeRemaining: Duration?
    public var cpuForeground: Duration
    public var cpuBackground: Duration
    /// System calls the sandbox refused.
    public var violations: Int
    /// Resident anonymous memory now (the last measurement, once the app has ended), in bytes.
    public var memory: UInt64
    /// The most memory measured in this run, in bytes.
    public var peakMemory: UInt64
    /// Launches into the background and resumptions there, since the host started.
    public var backgroundWakeups: Int
    public var snapshot: String?
    /// Disk space of its container and its app groups', and the limits that hold them.
    public var storage: StorageUsage?
    /// Its background URL session transfers (HostLoop+Transfers).
    public var transfers: [TransferListing] = []

    /// The figures have the names of a termination report's `usage` (TerminationReport.Usage),
    /// units included: one vocabulary for the same figure wherever it is printed.
    private enum CodingKeys: String, CodingKey {
        case event, time, app, name, pid, state, timeInStateSeconds, openBackgroundTasks, keptRunningBy, backgroundTimeRemainingSeconds
        case cpuForegroundSeconds, cpuBackgroundSeconds, violations, memoryBytes, peakMemoryBytes, backgroundWakeups, snapshot
        case storageBytes, storageLimitBytes, storageMechanism, storage, transfers
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(EventName.ps, forKey: .event)
        try container.encode(HostEvent.isoFormatter.string(from: Date()), forKey: .time)
        try container.encode(identifier, forKey: .app)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(pid, forKey: .pid)
        try container.encode(state, forKey: .state)
        try container.encode(timeInState.seconds, forKey: .timeInStateSeconds)
        try container.encode(openBackgroundTasks, forKey: .openBackgroundTasks)
        try container.encode(keptRunningBy, forKey: .keptRunningBy)
        try container.encodeIfPresent(backgroundTimeRemaining?.seconds, forKey: .backgroundTimeRemainingSeconds)
        try container.encode(cpuForeground.seconds, forKey: .cpuForegroundSeconds)
        try container.encode(cpuBackground.seconds, forKey: .cpuBackgroundSeconds)
        try container.encode(violations, forKey: .violations)
        try container.encode(memory, forKey: .memoryBytes)
        try container.encode(peakMemory, forKey: .peakMemoryBytes)
        try container.encode(backgroundWakeups, forKey: .backgroundWakeups)
        try container.encodeIfPresent(snapshot, forKey: .snapshot)
        if let storage {
            try container.encode(storage.bytes, forKey: .storageBytes)
            try container.encodeIfPresent(storage.limitBytes, forKey: .storageLimitBytes)
            try container.encode(storage.mechanism.rawValue, forKey: .storageMechanism)
            try container.encode(storage.parts, forKey: .storage)
        }
        try container.encode(transfers, forKey: .transfers)
    }
}

/// A pending BGTaskScheduler request, as `tasks` lists it. Encodable as `tasks --json` prints it:
/// one object per request, with `event` "task", `app` (the bundle identifier) and `name`.
public struct PendingTaskRequest: Sendable, Equatable, Encodable {
    /// The app's name.
    public var app: String
    /// The app's bundle identifier, `app` in JSON as in every event.
    public var bundleIdentifier: String
    public var identifier: String
    /// "refresh" or "processing".
    public var kind: String
    public var earliestBeginDate: Date?
    public var requiresExternalPower: Bool
    public var requiresNetworkConnectivity: Bool
    /// Why it does not run now ("due at …", "needs external power", "the app was force quit"),
    /// or nil when it runs at the next opportunity.
    public var waitingFor: String?

    private enum CodingKeys: String, CodingKey {
        case event, time, app, name, identifier, kind, earliestBeginDate, requiresExternalPower, requiresNetworkConnectivity, waitingFor
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(EventName.task, forKey: .event)
        try container.encode(HostEvent.isoFormatter.string(from: Date()), forKey: .time)
        try container.encode(bundleIdentifier, forKey: .app)
        try container.encode(app, forKey: .name)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(earliestBeginDate.map(HostEvent.isoFormatter.string(from:)), forKey: .earliestBeginDate)
        try container.encode(requiresExternalPower, forKey: .requiresExternalPower)
        try container.encode(requiresNetworkConnectivity, forKey: .requiresNetworkConnectivity)
        try container.encodeIfPresent(waitingFor, forKey: .waitingFor)
    }
}

/// The scheduler's clock, as `tasks` and the `started` event show it: real time moved on by
/// `advance` (the offset is kept in the scheduler's store, across hosts, until `advance reset`).
/// Encodable as `tasks --json` prints it: `event` "clock", the time, `offsetSeconds` and `now`.
public struct SchedulerClock: Sendable, Equatable, Encodable {
    /// How far `advance` has moved it from real time.
    public var offset: Duration
    /// The scheduler's time now.
    public var now: Date

    public init(offset: Duration, now: Date) {
        self.offset = offset
        self.now = now
    }

    /// "2026-11-21T08:42:15.292Z (3600.0 s ahead of real time)", or "… (real time)".
    public var description: String {
        let time = HostEvent.isoFormatter.string(from: now)
        if offset == .zero { return "\(time) (real time)" }
        return offset > .zero
            ? "\(time) (\(offset.formatted) ahead of real time)" : "\(time) (\((.zero - offset).formatted) behind real time)"
    }

    private enum CodingKeys: String, CodingKey {
        case event, time, offsetSeconds, now
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(EventName.clock, forKey: .event)
        try container.encode(HostEvent.isoFormatter.string(from: Date()), forKey: .time)
        try container.encode(offset.seconds, forKey: .offsetSeconds)
        try container.encode(HostEvent.isoFormatter.string(from: now), forKey: .now)
    }
}

/// A system call the sandbox refused, for events, `ps` and reports.
public struct SandboxViolation: Sendable, Equatable {
    public var time: Date
    /// "socket(AF_INET)", "ptrace", …
    public var call: String
    /// The app's state when it made the call.
    public var state: AppState
    /// Whether the call was a dangerous one, which ended the app.
    public var fatal: Bool
}

/// A scene session, as `scenes` lists it. Encodable as `scenes --json` prints it: one object per
/// session, with `event` "scene", the time, `app` (the bundle identifier) and `name`.
public struct SceneListing: Sendable, Equatable, Encodable {
    /// The app's name.
    public var app: String
    /// The app's bundle identifier, `app` in JSON as in every event.
    public var bundleIdentifier: String
    /// The session's persistent identifier, as `close-scene` and `discard-scene` take it.
    public var session: String
    /// Its scene's `activationState`: foregroundActive, foregroundInactive, background, or
    /// unattached (no scene connected).
    public var state: String
    /// Whether it is the session the app comes to the foreground with (the last one there).
    public var front: Bool
    /// The app's state (a suspended app's scenes are in the background).
    public var appState: AppState

    private enum CodingKeys: String, CodingKey {
        case event, time, app, name, session, state, front, appState
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(EventName.scene, forKey: .event)
        try container.encode(HostEvent.isoFormatter.string(from: Date()), forKey: .time)
        try container.encode(bundleIdentifier, forKey: .app)
        try container.encode(app, forKey: .name)
        try container.encode(session, forKey: .session)
        try container.encode(state, forKey: .state)
        try container.encode(front, forKey: .front)
        try container.encode(appState.rawValue, forKey: .appState)
    }
}
