import AppHostRuntime
import Foundation

extension HostEvent {
    /// The human-readable line: `12:00:01.234  Notes[4242]  didBecomeActive  → active`.
    var humanLine: String {
        let who = name.map { "\(TerminalText.escaping($0))[\(pid.map(String.init) ?? "-")]" } ?? "apphost"
        var line = "\(HostEvent.clockFormatter.string(from: time))  \(who)  \(event)"
        if let state, event != .terminated { line += "  → \(state.rawValue)" }
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

/// Rows in columns as wide as their widest cell.
func tableLines(_ rows: [[String]]) -> [String] {
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ") }
}
