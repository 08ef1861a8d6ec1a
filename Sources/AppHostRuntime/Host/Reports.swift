#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// Termination reports: one JSON file per ended app process, in the host's state directory.
public struct ReportStore: Sendable {
    public let directory: URL

    public init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("reports", isDirectory: true)
    }

    /// Everything a report holds (docs/reports.md, "Termination codes and reports").
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
        var keptRunningBy: [ContinuousMode]
        var backgroundTimeRemaining: Duration?
        var held: [HeldResource]
        var violationCount: Int
        var violations: [SandboxViolation]
        var lastEvents: [TerminationReport.Event]
        var storage: StorageUsage?
        var fatalError: String? = nil
        var backtrace: TerminationReport.Backtrace? = nil
        var backtraceUnavailable: String? = nil
        var transfers: [TransferListing] = []
    }

    /// Writes the report atomically (a temporary file renamed into place) and returns its path.
    func write(_ contents: Contents) throws -> URL {
        // Reports are the host user's alone: a report names files, pids and what apps held.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let stamp = ReportStore.fileStamp.string(from: contents.time)
        let url = directory.appendingPathComponent("\(contents.bundle.name)-\(stamp)-\(contents.pid).json")
        let bytes = [UInt8](try TerminationReport(contents).encoded())
        // Written whole under a temporary name, then renamed: a reader never sees half a report.
        let temporary = url.path + ".partial"
        let fd = try valueOrErrno("open \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        defer { closeIgnoringErrors(fd) }
        try writeAll(fd, bytes, call: "write \(temporary)")
        try valueOrErrno("rename \(temporary)") { rename(temporary, url.path) }
        return url
    }

    /// Reads a report written by `write`.
    public func read(_ url: URL) throws -> TerminationReport {
        try TerminationReport.decoded(from: Data(contentsOf: url))
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
