#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// The events of each host run, kept in `STATE/events/` as JSON lines (those of `--json`), one
/// file per run: what `apphost reports --timeline` draws. Written off the supervisor's queue.
///
/// The newest `keptRuns` runs are kept; a run stops recording at `maximumBytes` and says so in
/// its last line, so a long-lived host cannot fill the disk. What an app makes at will (its log
/// records, warnings, transfers, background tasks, requests, scenes, snapshots) is held to a
/// share: `appShare` per app and `appMadeBytes` for all apps, past which it is dropped with one
/// line saying so; the life-cycle events and the host's own are always recorded, in the rest.
public final class EventJournal: Sendable {
    public static let keptRuns = 5
    public static let maximumBytes = 64 * 1024 * 1024
    /// What one app's app-made events may take.
    public static let appShare = maximumBytes / 8
    /// What all apps' app-made events may take: a quarter is left for the life-cycle's.
    public static let appMadeBytes = maximumBytes * 3 / 4

    /// The events an app makes as often as it likes (a loop of log records, of transfers).
    static let appMade: Set<EventName> = [
        .log, .warning, .transfer, .backgroundTaskBegan, .backgroundTaskEnded, .taskSubmitted, .taskCancelled,
        .fetchInterval, .scene, .snapshot, .violation, .didUpdateLocations, .notification,
    ]

    private final class State {
        var written = 0
        var full = false
        var appMade = 0
        var byApp: [String: Int] = [:]
        /// The apps past their share, and whether all apps' share is spent (each said once).
        var cut: Set<String> = []
        var appMadeFull = false
    }

    public let url: URL
    /// The journal's size, and its shares for app-made events (the statics; a test's own).
    let limits: (maximum: Int, appShare: Int, appMade: Int)
    private let fd: Int32
    private let queue = RecordingQueue(label: "apphost.journal")
    nonisolated(unsafe) private let state = State()  // touched only on `queue`

    /// Starts the journal of a run that began at `start`, and removes the oldest beyond `keptRuns`.
    public convenience init(stateDirectory: URL, start: Date = Date()) throws {
        try self.init(stateDirectory: stateDirectory, start: start, limits: (Self.maximumBytes, Self.appShare, Self.appMadeBytes))
    }

    init(stateDirectory: URL, start: Date = Date(), limits: (maximum: Int, appShare: Int, appMade: Int)) throws {
        self.limits = limits
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
            if let app = event.app, Self.appMade.contains(event.event) {
                let mine = state.byApp[app, default: 0]
                let overShare = mine + line.count > limits.appShare
                if overShare || state.appMade + line.count > limits.appMade {
                    let first = overShare ? state.cut.insert(app).inserted : !state.appMadeFull
                    if !overShare { state.appMadeFull = true }
                    guard first else { return }
                    let whose = overShare ? "\(event.name ?? app)'s" : "the apps'"
                    let share = overShare ? limits.appShare : limits.appMade
                    let notice = HostEvent(
                        time: event.time, app: event.app, name: event.name, event: .warning,
                        detail: "\(whose) log records, warnings, transfers and other events they make past \(UInt64(share).mebibytes) are not journaled; life-cycle events still are")
                    line = Array((notice.jsonLine + "\n").utf8)
                } else {
                    state.byApp[app] = mine + line.count
                    state.appMade += line.count
                }
            }
            if dropped > 0 {
                let notice = HostEvent(time: event.time, event: .warning, detail: "\(dropped) events were not journaled: they came faster than the journal could write them")
                line = Array((notice.jsonLine + "\n").utf8) + line
            }
            if state.written + line.count > limits.maximum {
                state.full = true
                let notice = HostEvent(time: event.time, event: .warning, detail: "the journal stopped at \(limits.maximum) bytes; later events are not recorded")
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
