public import Foundation

/// One line of the host's event stream: a life-cycle event of one app, or a notice of the host's.
///
/// Codable as the `--json` lines are: `time` (ISO 8601 with milliseconds), `app` (always
/// present: null for the host's own notices), `name`, `pid`, `event`, `state`, `detail`,
/// `elapsedMs`, for `terminated` the termination's `kind`, `namespace`, `code` and `reason`, the
/// `report`'s path and, for a crash or a watchdog kill, `fatalError`, `backtrace` (the top
/// frames) and `appFrame` (the first frame in the app's code), for `log` the record's `level`
/// and `label`, and for `started` the host's mechanisms (`HostSummary`). Other absent
/// fields are omitted. docs/events.md, "JSON", lists them.
public struct HostEvent: Sendable, Equatable, Codable {
    public var time: Date
    /// The app's bundle identifier; nil for the host's own notices.
    public var app: String?
    /// The app's CFBundleName.
    public var name: String?
    public var pid: Int32?
    public var event: EventName
    public var state: AppState?
    public var detail: String?
    /// How long the step took: a callback from sent to acknowledged; `suspended` from the freeze
    /// request to every thread verified stopped; `resumed`, the thaw.
    public var elapsed: Duration?
    /// For `terminated`: why, with its namespace and code.
    public var termination: Termination?
    /// For `terminated`: the report's path.
    public var report: String?
    /// For `terminated` by a crash: the Swift runtime's fatal-error message (the report's `fatalError`).
    public var fatalError: String?
    /// For `terminated` by a crash or a watchdog: the backtrace's top frames, one line each.
    public var backtrace: [String]?
    /// For `terminated` by a crash or a watchdog: the first frame in the app's own code
    /// ("Notes.AppDelegate.save() + 36").
    public var appFrame: String?
    /// For `started`: how this host suspends, confines and limits apps, as fields.
    public var host: HostSummary?
    /// For `log`: the swift-log record's level and its logger's label (the message is `detail`).
    public var level: LogLevel?
    public var label: String?

    public init(
        time: Date, app: String? = nil, name: String? = nil, pid: Int32? = nil, event: EventName, state: AppState? = nil,
        detail: String? = nil, elapsed: Duration? = nil, termination: Termination? = nil, report: String? = nil,
        host: HostSummary? = nil, level: LogLevel? = nil, label: String? = nil
    ) {
        self.host = host
        self.level = level
        self.label = label
        self.time = time
        self.app = app
        self.name = name
        self.pid = pid
        self.event = event
        self.state = state
        self.detail = detail
        self.elapsed = elapsed
        self.termination = termination
        self.report = report
    }

    private enum CodingKeys: String, CodingKey {
        case time, app, name, pid, event, state, detail, elapsedMs, kind, namespace, code, reason, report, level, label
        case fatalError, backtrace, appFrame
        case launcher, suspension, sandbox, memory, storage, instance, stateDirectory, schedulerClock, capacity, capacityBoundBy
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let stamp = try container.decode(String.self, forKey: .time)
        guard let time = HostEvent.isoFormatter.date(from: stamp) else {
            throw DecodingError.dataCorruptedError(forKey: .time, in: container, debugDescription: "not an ISO 8601 time: \(stamp)")
        }
        self.time = time
        app = try container.decodeIfPresent(String.self, forKey: .app)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        pid = try container.decodeIfPresent(Int32.self, forKey: .pid)
        event = try container.decode(EventName.self, forKey: .event)
        state = try container.decodeIfPresent(AppState.self, forKey: .state)
        detail = try container.decodeIfPresent(String.self, forKey: .detail)
        elapsed = try container.decodeIfPresent(Double.self, forKey: .elapsedMs).map { .seconds(double: $0 / 1000) }
        if let kind = try container.decodeIfPresent(String.self, forKey: .kind) {
            termination = Termination(
                kind: .init(rawValue: kind),
                namespace: .init(rawValue: try container.decode(String.self, forKey: .namespace)),
                code: try container.decodeIfPresent(String.self, forKey: .code).flatMap(Termination.parseCode),
                reason: try container.decode(String.self, forKey: .reason))
        }
        report = try container.decodeIfPresent(String.self, forKey: .report)
        level = try container.decodeIfPresent(LogLevel.self, forKey: .level)
        label = try container.decodeIfPresent(String.self, forKey: .label)
        fatalError = try container.decodeIfPresent(String.self, forKey: .fatalError)
        backtrace = try container.decodeIfPresent([String].self, forKey: .backtrace)
        appFrame = try container.decodeIfPresent(String.self, forKey: .appFrame)
        if let instance = try container.decodeIfPresent(String.self, forKey: .instance) {
            host = HostSummary(
                launcher: try container.decodeIfPresent(String.self, forKey: .launcher),
                suspension: try container.decode(String.self, forKey: .suspension),
                sandbox: try container.decode(String.self, forKey: .sandbox),
                memory: try container.decode(String.self, forKey: .memory),
                storage: try container.decode(String.self, forKey: .storage),
                instance: instance, stateDirectory: try container.decode(String.self, forKey: .stateDirectory),
                schedulerClock: try container.decodeIfPresent(String.self, forKey: .schedulerClock),
                capacity: try container.decodeIfPresent(Int.self, forKey: .capacity),
                capacityBoundBy: try container.decodeIfPresent(String.self, forKey: .capacityBoundBy))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(HostEvent.isoFormatter.string(from: time), forKey: .time)
        try container.encode(app, forKey: .app)  // null for the host's own: every line has `app`
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(pid, forKey: .pid)
        try container.encode(event, forKey: .event)
        try container.encodeIfPresent(state, forKey: .state)
        try container.encodeIfPresent(detail, forKey: .detail)
        try container.encodeIfPresent(elapsed.map { ($0.seconds * 1_000_000).rounded() / 1000 }, forKey: .elapsedMs)
        if let termination {
            try container.encode(termination.kind.rawValue, forKey: .kind)
            try container.encode(termination.namespace.rawValue, forKey: .namespace)
            try container.encodeIfPresent(termination.formattedCode, forKey: .code)
            try container.encode(termination.reason, forKey: .reason)
        }
        try container.encodeIfPresent(report, forKey: .report)
        try container.encodeIfPresent(level, forKey: .level)
        try container.encodeIfPresent(label, forKey: .label)
        try container.encodeIfPresent(fatalError, forKey: .fatalError)
        try container.encodeIfPresent(backtrace, forKey: .backtrace)
        try container.encodeIfPresent(appFrame, forKey: .appFrame)
        if let host {
            try container.encodeIfPresent(host.launcher, forKey: .launcher)
            try container.encode(host.suspension, forKey: .suspension)
            try container.encode(host.sandbox, forKey: .sandbox)
            try container.encode(host.memory, forKey: .memory)
            try container.encode(host.storage, forKey: .storage)
            try container.encode(host.instance, forKey: .instance)
            try container.encode(host.stateDirectory, forKey: .stateDirectory)
            try container.encodeIfPresent(host.schedulerClock, forKey: .schedulerClock)
            try container.encodeIfPresent(host.capacity, forKey: .capacity)
            try container.encodeIfPresent(host.capacityBoundBy, forKey: .capacityBoundBy)
        }
    }

    /// The JSON line of `--json` (keys sorted, one line).
    public var jsonLine: String { HostEvent.jsonLine(self) }

    /// One value as a JSON line, keys sorted: events, `ps` and `tasks` listings alike.
    public static func jsonLine(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    /// ISO 8601 with milliseconds, as every time in events and reports.
    nonisolated(unsafe) public static let isoFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}

/// What the `started` event says of the host, as fields besides its text.
public struct HostSummary: Sendable, Equatable {
    /// How app processes start: "template" (forked from the launch template) or "exec".
    public var launcher: String?
    /// "cgroup v2 freezer" or "SIGSTOP".
    public var suspension: String
    /// How apps are confined: "seccomp, Landlock ABI 7, …".
    public var sandbox: String
    /// "memory cgroup" or "sampling".
    public var memory: String
    /// "project-quota", "disk-image" or "accounting".
    public var storage: String
    public var instance: String
    public var stateDirectory: String
    /// The scheduler's clock (ISO 8601) when `advance` has moved it from the wall clock.
    public var schedulerClock: String?
    /// How many apps may run at once, and the limit that says so (HostCapacity).
    public var capacity: Int?
    public var capacityBoundBy: String?
}

extension Termination {
    /// The number behind a formatted code: "0xdead10cc" or "11".
    static func parseCode(_ text: String) -> UInt64? {
        text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }
}

/// A swift-log level, as `log` events and `--log-level` name it (Logging.Logger.Level's names).
public enum LogLevel: String, Sendable, Codable, CaseIterable, Comparable {
    case trace, debug, info, notice, warning, error, critical

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
