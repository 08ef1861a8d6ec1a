public import Foundation

/// Termination reports: one JSON file per ended app process, in the host's state directory.
public struct ReportStore: Sendable {
    public let directory: URL

    public init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("reports", isDirectory: true)
    }

    /// Everything a report holds (LIFECYCLE.md, "Termination reports").
    struct Contents {
        var bundle: AppBundle
        var pid: Int32
        var time: Date
        var launchedAt: Date
        var finalState: AppState
        var termination: Termination
        var exit: ProcessExit
        var timeInState: Duration
        var cpuForeground: Duration
        var cpuBackground: Duration
        var memory: UInt64
        var peakMemory: UInt64
        var backgroundWakeups: Int
        var openBackgroundTasks: [String]
        var backgroundTimeRemaining: Duration?
        var held: [HeldResource]
        var violationCount: Int
        var violations: [SandboxViolation]
        var lastEvents: [HostEvent]
    }

    /// Writes the report atomically (a temporary file renamed into place) and returns its path.
    func write(_ contents: Contents) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stamp = ReportStore.fileStamp.string(from: contents.time)
        let url = directory.appendingPathComponent("\(contents.bundle.name)-\(stamp)-\(contents.pid).json")
        var usage: [String: Any] = [
            "timeInStateSeconds": contents.timeInState.seconds,
            "cpuForegroundSeconds": contents.cpuForeground.seconds,
            "cpuBackgroundSeconds": contents.cpuBackground.seconds,
            "memoryBytes": Int(contents.memory),
            "peakMemoryBytes": Int(contents.peakMemory),
            "maximumResidentBytes": Int(contents.exit.maximumResidentBytes),
            "openBackgroundTasks": contents.openBackgroundTasks.count,
            "backgroundWakeups": contents.backgroundWakeups,
            "violations": contents.violationCount,
        ]
        if let left = contents.backgroundTimeRemaining { usage["backgroundTimeRemainingSeconds"] = left.seconds }
        var object: [String: Any] = [
            "app": contents.bundle.identifier,
            "name": contents.bundle.name,
            "bundle": contents.bundle.url.path,
            "pid": Int(contents.pid),
            "time": HostEvent.isoFormatter.string(from: contents.time),
            "launchedAt": HostEvent.isoFormatter.string(from: contents.launchedAt),
            "state": contents.finalState.rawValue,
            "kind": contents.termination.kind.rawValue,
            "namespace": contents.termination.namespace.rawValue,
            "reason": contents.termination.reason,
            "crash": contents.termination.isCrash,
            "held": contents.openBackgroundTasks.map { ["backgroundTask": $0] } + contents.held.map(Self.entry),
            "violationCount": contents.violationCount,
            "violations": contents.violations.map { violation -> [String: Any] in
                [
                    "time": HostEvent.isoFormatter.string(from: violation.time), "call": violation.call,
                    "state": violation.state.rawValue, "fatal": violation.fatal,
                ]
            },
            "usage": usage,
            "lastEvents": contents.lastEvents.map { event -> [String: Any] in
                var entry: [String: Any] = ["time": HostEvent.isoFormatter.string(from: event.time), "event": event.event]
                if let state = event.state { entry["state"] = state.rawValue }
                if let detail = event.detail { entry["detail"] = detail }
                return entry
            },
        ]
        if let code = contents.termination.formattedCode { object["code"] = code }

        switch contents.exit.status {
        case .exited(let status): object["exitStatus"] = Int(status)
        case .signaled(let signal, _): object["signal"] = signalName(signal)
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try data.write(to: url, options: .atomic)
        return url
    }

    /// A held resource as the report's `held` array lists it.
    private static func entry(_ held: HeldResource) -> [String: Any] {
        var entry: [String: Any] = ["path": held.path, "pid": Int(held.pid), "fd": Int(held.fd)]
        switch held.what {
        case .lock(let lock):
            entry["lock"] = ["kind": lock.kind, "type": lock.type, "range": lock.range]
        case .sharedResource(let declared):
            entry["sharedResource"] = declared
        }
        return entry
    }

    /// The reports, oldest first.
    public func list() -> [URL] {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
        return files.filter { $0.pathExtension == "json" }.sorted { lhs, rhs in
            let left = (try? lhs.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            let right = (try? rhs.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            return left == right ? lhs.lastPathComponent < rhs.lastPathComponent : left < right
        }
    }

    static let fileStamp: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss.SSS"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()
}
