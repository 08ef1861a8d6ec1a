import AppHostRuntime
import Foundation

/// Rows in columns as wide as their widest cell.
func tableLines(_ rows: [[String]]) -> [String] {
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ") }
}
