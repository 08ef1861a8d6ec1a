import Foundation

extension HostEvent {
    /// The human-readable line, as `apphost launch` prints it without `--json`:
    /// `12:00:01.234  Notes[4242]  didBecomeActive  → active`.
    public var humanLine: String {
        let who = name.map { "\(TerminalText.escaping($0))[\(pid.map(String.init) ?? "-")]" } ?? "apphost"
        var line = "\(HostEvent.clockFormatter.string(from: time))  \(who)  \(event)"
        if let state, event != .terminated, event != .log { line += "  → \(state.rawValue)" }
        if let level { line += "  \(level.rawValue)  \(TerminalText.escaping(label ?? ""))" }
        if let elapsed { line += String(format: "  (%.3f ms)", elapsed.seconds * 1000) }
        if let termination {
            line += ": \(termination.namespace)"
            if let code = termination.formattedCode {
                line += " \(code)"
            } else if termination.namespace == .jetsam || termination.namespace == .resource {
                line += " \(termination.kind)"
            }
            line += ", \(TerminalText.escaping(termination.reason))"
            // Still one line: the crash's message and where in the app it was.
            if let fatalError { line += "; \(TerminalText.escaping(fatalError))" }
            if let appFrame { line += "; at \(TerminalText.escaping(appFrame))" }
        } else if let detail, !detail.isEmpty {
            line += "  \(TerminalText.escaping(detail.replacingOccurrences(of: "\n", with: " ⏎ ")))"
        }
        if let report { line += " (report: \(report))" }
        return line
    }

    static let clockFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter
    }()
}
