public import Foundation

/// One line of the host's event stream: a life-cycle event of one app, or a notice of the host's.
public struct HostEvent: Sendable {
    public var time: Date
    /// The app's bundle identifier; nil for the host's own notices.
    public var app: String?
    /// The app's CFBundleName.
    public var name: String?
    public var pid: Int32?
    public var event: String
    public var state: AppState?
    public var detail: String?
    /// How long the step took: a callback from sent to acknowledged; `suspended` from the freeze
    /// request to every thread verified stopped; `resumed`, the thaw.
    public var elapsed: Duration?
    /// For `terminated`: why, with its namespace and code.
    public var termination: Termination?
    /// For `terminated`: the report's path.
    public var report: String?

    /// The human-readable line: `12:00:01.234  Notes[4242]  didBecomeActive  active`.
    public var humanLine: String {
        let who = name.map { "\($0)[\(pid.map(String.init) ?? "-")]" } ?? "apphost"
        var line = "\(HostEvent.clockFormatter.string(from: time))  \(who)  \(event)"
        if let state, event != "terminated" { line += "  → \(state.rawValue)" }
        if let elapsed { line += String(format: "  (%.3f ms)", elapsed.seconds * 1000) }
        if let termination {
            line += ": \(termination.namespace)"
            if let code = termination.formattedCode {
                line += " \(code)"
            } else if termination.namespace == .jetsam || termination.namespace == .resource {
                line += " \(termination.kind)"
            }
            line += ", \(termination.reason)"
        } else if let detail, !detail.isEmpty {
            line += "  \(detail.replacingOccurrences(of: "\n", with: " ⏎ "))"
        }
        if let report { line += " (report: \(report))" }
        return line
    }

    /// The JSON line: time, app, name, pid, event, state, and detail, kind, namespace, code,
    /// reason and report where they apply.
    public var jsonLine: String {
        var object: [String: Any] = ["time": HostEvent.isoFormatter.string(from: time), "event": event]
        if let app { object["app"] = app }
        if let name { object["name"] = name }
        if let pid { object["pid"] = Int(pid) }
        if let state { object["state"] = state.rawValue }
        if let detail { object["detail"] = detail }
        if let elapsed { object["elapsedMs"] = (elapsed.seconds * 1_000_000).rounded() / 1000 }
        if let termination {
            object["kind"] = termination.kind.rawValue
            object["namespace"] = termination.namespace.rawValue
            if let code = termination.formattedCode { object["code"] = code }
            object["reason"] = termination.reason
        }
        if let report { object["report"] = report }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// ISO 8601 with milliseconds, as every time in events and reports.
    nonisolated(unsafe) public static let isoFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    static let clockFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter
    }()
}
