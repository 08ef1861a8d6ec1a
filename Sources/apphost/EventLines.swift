import AppHostRuntime
import Foundation

extension HostEvent {
    /// The human-readable line: `12:00:01.234  Notes[4242]  didBecomeActive  → active`.
    var humanLine: String {
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

/// Rows in columns as wide as their widest cell, with no spaces at the end of a line.
func tableLines(_ rows: [[String]]) -> [String] {
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        let line = zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
        return String(line.reversed().drop { $0 == " " }.reversed())  // the last column unpadded
    }
}
