import AppHostRuntime
import Foundation

/// Rows in columns as wide as their widest cell, with no spaces at the end of a line.
func tableLines(_ rows: [[String]]) -> [String] {
    // A cell may hold an app's words (a session name, a URL, a scene's name): none reaches the
    // terminal as a control character (TerminalText).
    let rows = rows.map { $0.map(TerminalText.escaping) }
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        let line = zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
        return String(line.reversed().drop { $0 == " " }.reversed())  // the last column unpadded
    }
}
