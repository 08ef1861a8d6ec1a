#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// `apphost launch --trace FILE`: the host's run as Trace Event JSON (the format Perfetto and
/// chrome://tracing open), written as it happens off the supervisor's queue.
///
/// Each app is a process named after it, whatever its pids, with four tracks: `state` (a span per
/// state), `callbacks` (each delegate callback from request to acknowledgement, and each freeze),
/// `background tasks` (async spans, which may overlap) and `events` (every other event as an
/// instant, terminations with their code and reason). The host's own notices are the `apphost`
/// process. Times are microseconds since the first event. A host that is killed leaves the
/// array unclosed, which both viewers accept. The file stops growing at `maximumBytes`, with an
/// instant that says so.
public final class TraceEventWriter: Sendable {
    public static let maximumBytes = 256 * 1024 * 1024

    private final class State {
        var timeline = Timeline()
        var processes: [String: Int] = [:]
        var wroteFirst = false
        var nextAsyncID = 1
        var origin: Date?
        var written = 0
        var full = false
    }

    private enum Track: Int, CaseIterable {
        case state = 1, callbacks, backgroundTasks, events

        var name: String {
            switch self {
            case .state: "state"
            case .callbacks: "callbacks"
            case .backgroundTasks: "background tasks"
            case .events: "events"
            }
        }
    }

    private let fd: Int32
    private let queue = RecordingQueue(label: "apphost.trace")
    nonisolated(unsafe) private let state = State()  // touched only on `queue`

    /// Creates (or truncates) `url` and writes the array's opening and the host's track.
    public init(url: URL) throws {
        fd = try valueOrErrno("open \(url.path)") { open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        try writeAll(fd, Array("[\n".utf8), call: "write \(url.path)")
        queue.sync { emit(["name": "process_name", "ph": "M", "pid": 1, "args": ["name": "apphost"]]) }
    }

    /// Records one event; returns at once.
    public func record(_ event: HostEvent) {
        queue.async { [self] dropped in
            if state.origin == nil { state.origin = event.time }
            if dropped > 0 { note("\(dropped) events dropped: they came faster than the trace could write them", at: event.time) }
            for item in state.timeline.add(event) { write(item) }
        }
    }

    /// An instant on the `apphost` process: something about the trace itself.
    private func note(_ text: String, at time: Date) {
        emit(["name": text, "cat": "trace", "ph": "i", "s": "g", "pid": 1, "tid": Track.events.rawValue, "ts": microseconds(time)])
    }

    /// Ends the spans still open at `time`, closes the array and the file.
    public func finish(at time: Date = Date()) {
        queue.sync {
            for item in state.timeline.finish(at: time) { write(item) }
            _ = try? writeAll(fd, Array("\n]\n".utf8), call: "write trace")
            closeIgnoringErrors(fd)
        }
    }

    private func write(_ item: Timeline.Item) {
        let pid = process(item)
        let start = microseconds(item.start)
        var args: [String: Any] = [:]
        if let detail = item.detail { args["detail"] = detail }
        if let itemPID = item.pid { args["pid"] = Int(itemPID) }
        switch item.kind {
        case .state(let appState):
            emit(span(appState.rawValue, "state", pid, .state, start, item.end, args))
        case .callback(let name):
            emit(span(name.rawValue, "callback", pid, .callbacks, start, item.end, args))
        case .freeze:
            emit(span("freeze", "suspension", pid, .callbacks, start, item.end, args))
        case .backgroundTask(let label):
            let id = state.nextAsyncID
            state.nextAsyncID += 1
            let common: [String: Any] = ["name": label.isEmpty ? "background task" : label, "cat": "backgroundTask", "pid": pid, "tid": Track.backgroundTasks.rawValue, "id": id]
            emit(common.merging(["ph": "b", "ts": start]) { $1 })
            emit(common.merging(["ph": "e", "ts": microseconds(item.end ?? item.start)]) { $1 })
        case .moment(let name):
            if let termination = item.termination {
                args["namespace"] = termination.namespace.rawValue
                args["kind"] = termination.kind.rawValue
                args["reason"] = termination.reason
                if let code = termination.formattedCode { args["code"] = code }
            }
            if let level = item.level { args["level"] = level.rawValue }
            if let label = item.label { args["label"] = label }
            var instant: [String: Any] = ["name": name.rawValue, "cat": "event", "ph": "i", "s": "t", "pid": pid, "tid": Track.events.rawValue, "ts": start]
            if !args.isEmpty { instant["args"] = args }
            emit(instant)
        }
    }

    private func span(_ name: String, _ category: String, _ pid: Int, _ track: Track, _ start: Int64, _ end: Date?, _ args: [String: Any]) -> [String: Any] {
        var span: [String: Any] = ["name": name, "cat": category, "ph": "X", "pid": pid, "tid": track.rawValue, "ts": start, "dur": max(0, microseconds(end ?? .distantPast) - start)]
        if !args.isEmpty { span["args"] = args }
        return span
    }

    /// The trace's process for the item's app: named once, on first sight.
    private func process(_ item: Timeline.Item) -> Int {
        guard let app = item.app else { return 1 }
        if let known = state.processes[app] { return known }
        let pid = state.processes.count + 2
        state.processes[app] = pid
        let label = item.name.map { "\($0) (\(app))" } ?? app
        emit(["name": "process_name", "ph": "M", "pid": pid, "args": ["name": label]])
        emit(["name": "process_sort_index", "ph": "M", "pid": pid, "args": ["sort_index": pid]])
        for track in Track.allCases {
            emit(["name": "thread_name", "ph": "M", "pid": pid, "tid": track.rawValue, "args": ["name": track.name]])
            emit(["name": "thread_sort_index", "ph": "M", "pid": pid, "tid": track.rawValue, "args": ["sort_index": track.rawValue]])
        }
        return pid
    }

    private func microseconds(_ date: Date) -> Int64 {
        guard let origin = state.origin, date > .distantPast else { return 0 }
        return Int64((date.timeIntervalSince(origin) * 1_000_000).rounded())
    }

    private func emit(_ object: [String: Any]) {
        guard !state.full, let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        if state.written + data.count > Self.maximumBytes {
            state.full = true
            let stop = ["name": "the trace stopped at \(Self.maximumBytes) bytes; later events are not in it", "cat": "trace", "ph": "i", "s": "g", "pid": 1, "tid": Track.events.rawValue] as [String: Any]
            guard let last = try? JSONSerialization.data(withJSONObject: stop, options: [.sortedKeys]) else { return }
            _ = try? writeAll(fd, Array(",\n".utf8) + Array(last), call: "write trace")
            return
        }
        let separator = state.wroteFirst ? ",\n" : ""
        state.wroteFirst = true
        state.written += data.count + separator.utf8.count
        _ = try? writeAll(fd, Array(separator.utf8) + Array(data), call: "write trace")
    }
}
