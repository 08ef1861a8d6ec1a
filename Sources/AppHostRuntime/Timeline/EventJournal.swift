#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// The events of each host run, kept in `STATE/events/` as JSON lines (those of `--json`), one
/// file per run: what `apphost reports --timeline` draws. Written off the supervisor's queue.
///
/// The newest `keptRuns` runs are kept; a run stops recording at `maximumBytes` and says so in
/// its last line, so a long-lived host cannot fill the disk.
public final class EventJournal: Sendable {
    public static let keptRuns = 5
    public static let maximumBytes = 64 * 1024 * 1024

    private final class State {
        var written = 0
        var full = false
    }

    public let url: URL
    private let fd: Int32
    private let queue = RecordingQueue(label: "apphost.journal")
    nonisolated(unsafe) private let state = State()  // touched only on `queue`

    /// Starts the journal of a run that began at `start`, and removes the oldest beyond `keptRuns`.
    public init(stateDirectory: URL, start: Date = Date()) throws {
        let directory = Self.directory(stateDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let url = directory.appendingPathComponent("\(ReportStore.fileStamp.string(from: start))-\(getpid()).jsonl")
        self.url = url
        fd = try valueOrErrno("open \(url.path)") { open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        for old in Self.runs(stateDirectory: stateDirectory).dropLast(Self.keptRuns) {
            try? FileManager.default.removeItem(at: old)
        }
    }

    /// Records one event; returns at once.
    public func record(_ event: HostEvent) {
        queue.async { [self] dropped in
            guard !state.full else { return }
            var line = Array((event.jsonLine + "\n").utf8)
            if dropped > 0 {
                let notice = HostEvent(time: event.time, event: .warning, detail: "\(dropped) events were not journaled: they came faster than the journal could write them")
                line = Array((notice.jsonLine + "\n").utf8) + line
            }
            if state.written + line.count > Self.maximumBytes {
                state.full = true
                let notice = HostEvent(time: event.time, event: .warning, detail: "the journal stopped at \(Self.maximumBytes) bytes; later events are not recorded")
                line = Array((notice.jsonLine + "\n").utf8)
            }
            state.written += line.count
            _ = try? writeAll(fd, line, call: "write \(url.path)")
        }
    }

    /// Writes what is queued and closes the file.
    public func close() {
        queue.sync { closeIgnoringErrors(fd) }
    }

    public static func directory(_ stateDirectory: URL) -> URL {
        stateDirectory.appendingPathComponent("events", isDirectory: true)
    }

    /// The runs' journals, oldest first (their names begin with the run's start time).
    public static func runs(stateDirectory: URL) -> [URL] {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory(stateDirectory), includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.pathExtension == "jsonl" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// The events of one journal. A line that does not decode (a run killed mid-write) is skipped.
    public static func events(in url: URL) throws -> [HostEvent] {
        let text = try String(contentsOf: url, encoding: .utf8)
        let decoder = JSONDecoder()
        return text.split(separator: "\n").compactMap { try? decoder.decode(HostEvent.self, from: Data($0.utf8)) }
    }
}
