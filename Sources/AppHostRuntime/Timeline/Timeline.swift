public import Foundation

/// A host run as spans and moments per app, built from its events as they come: what `--trace`
/// writes as Trace Event JSON and `apphost reports --timeline` draws as swim lanes.
///
/// Spans: each state an app was in (from the event that entered it to the next), each delegate
/// callback (from its request to its acknowledgement), each background task (began to ended),
/// each freeze (the work of suspending). Moments: every other event, a termination included.
public struct Timeline: Sendable {
    public struct Item: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case state(AppState)
            case callback(EventName)
            case backgroundTask(String)
            case freeze
            case moment(EventName)
        }

        /// The app's identifier and name; nil for the host's own notices.
        public var app: String?
        public var name: String?
        public var pid: Int32?
        public var kind: Kind
        public var start: Date
        /// nil for a moment.
        public var end: Date?
        public var detail: String?
        /// For a termination: why.
        public var termination: Termination?
        /// For a `log` record: its level and its logger's label.
        public var level: LogLevel?
        public var label: String?
    }

    private struct Open {
        var name: String?
        var pid: Int32?
        var state: (AppState, Date)?
        var tasks: [String: Date] = [:]
    }

    private var apps: [String: Open] = [:]
    /// The first event's time: where a drawing starts.
    public private(set) var start: Date?

    public init() {}

    /// The items `event` completes (a span it ends, a callback it acknowledges) and any moment it is.
    public mutating func add(_ event: HostEvent) -> [Item] {
        if start == nil { start = event.time }
        guard let app = event.app else {
            return [Item(kind: .moment(event.event), start: event.time, detail: event.detail)]
        }
        var open = apps[app] ?? Open()
        open.name = event.name ?? open.name
        open.pid = event.pid ?? open.pid
        var items: [Item] = []
        func item(_ kind: Item.Kind, from start: Date, to end: Date?, detail: String? = nil) -> Item {
            Item(app: app, name: open.name, pid: open.pid, kind: kind, start: start, end: end, detail: detail)
        }

        if event.event.isCallback || event.event == .suspended, let elapsed = event.elapsed {
            let began = event.time.addingTimeInterval(-elapsed.seconds)
            items.append(item(event.event == .suspended ? .freeze : .callback(event.event), from: began, to: event.time, detail: event.detail))
        } else {
            var moment = item(.moment(event.event), from: event.time, to: nil, detail: event.detail)
            moment.termination = event.termination
            moment.level = event.level
            moment.label = event.label
            items.append(moment)
        }
        switch event.event {
        case .backgroundTaskBegan:
            open.tasks[event.detail ?? ""] = event.time
        case .backgroundTaskEnded:
            if let began = open.tasks.removeValue(forKey: event.detail ?? "") {
                items.append(item(.backgroundTask(event.detail ?? ""), from: began, to: event.time))
            }
        default:
            break
        }
        if event.event == .terminated {
            items += close(&open, app: app, at: event.time)
        } else if let state = event.state, state != open.state?.0 {
            if let (previous, since) = open.state { items.append(item(.state(previous), from: since, to: event.time)) }
            // An app that is not running has no span: what is said of it after its end (a
            // report's events, in state terminated) must not draw a lane on to the host's end.
            open.state = state.isRunning ? (state, event.time) : nil
        }
        apps[app] = open
        return items
    }

    /// Ends every open span at `time` (the host's end) and returns them.
    public mutating func finish(at time: Date) -> [Item] {
        var items: [Item] = []
        for app in apps.keys.sorted() {
            var open = apps[app]!
            items += close(&open, app: app, at: time)
            apps[app] = open
        }
        return items
    }

    private func close(_ open: inout Open, app: String, at time: Date) -> [Item] {
        var items: [Item] = []
        if let (state, since) = open.state {
            items.append(Item(app: app, name: open.name, pid: open.pid, kind: .state(state), start: since, end: time))
        }
        for (label, began) in open.tasks.sorted(by: { $0.value < $1.value }) {
            items.append(Item(app: app, name: open.name, pid: open.pid, kind: .backgroundTask(label), start: began, end: time))
        }
        open.state = nil
        open.tasks = [:]
        return items
    }
}

extension AppState {
    /// Whether an app in this state has a process: every state but not-running and terminated.
    var isRunning: Bool { self != .notRunning && self != .terminated }
}
