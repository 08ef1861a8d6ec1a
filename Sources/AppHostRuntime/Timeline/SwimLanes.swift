import Foundation

/// `apphost reports --timeline`: a host run as text, one lane per app, time running left to right.
///
///     0 s         2 s         4 s         6 s
///     Notes    LAAAAAAAAAAbbbbsssssssssssssssssss
///     Weather         bbbbbsssssssAAAAAAAAAAAAx
///
/// Each column shows the state that held longest within it; a column in which the app ended
/// shows `x` when the system ended it and `|` when it was asked to end. Below the lanes, one line
/// per end says when and why.
public enum SwimLanes {
    /// The letter of each state in a lane, as the legend says; nil for the states with no
    /// process, which have no span (Timeline).
    static func glyph(_ state: AppState) -> Character? {
        switch state {
        case .launching: "L"
        case .inactive: "i"
        case .active: "A"
        case .background: "b"
        case .suspended: "s"
        case .notRunning, .terminated: nil
        }
    }

    public static let legend = "L launching  A active  i inactive  b background  s suspended  x ended by the system  | ended as asked"

    /// The lanes of `events` (one run), `width` columns of time, only `app`'s when given (its
    /// identifier, name, or the identifier's last part, in any case).
    public static func render(_ events: [HostEvent], width: Int = 60, app: String? = nil) -> [String] {
        let wanted = app?.lowercased()
        let events = events.filter { event in
            guard let wanted, let identifier = event.app?.lowercased() else { return true }
            return identifier == wanted || event.name?.lowercased() == wanted || identifier.hasSuffix("." + wanted)
        }
        guard let first = events.first?.time, let last = events.last?.time else { return ["no events"] }
        var timeline = Timeline()
        var items = events.flatMap { timeline.add($0) }
        items += timeline.finish(at: last)
        let span = max(last.timeIntervalSince(first), 0.001)
        let columns = max(width, 10)
        let step = span / Double(columns)

        // Lanes in order of first appearance, named as the events name them.
        var order: [String] = []
        var names: [String: String] = [:]
        for event in events {
            guard let identifier = event.app else { continue }
            if names[identifier] == nil { order.append(identifier) }
            names[identifier] = event.name ?? names[identifier] ?? identifier
        }
        if let app, order.isEmpty { return ["no events of \(app) in this run"] }
        let labelWidth = (order.map { names[$0]!.count }.max() ?? 0) + 2

        var lines: [String] = []
        lines.append("\(HostEvent.isoFormatter.string(from: first)) to +\(seconds(span)), \(seconds(step)) per column")
        lines.append((String(repeating: " ", count: labelWidth) + axis(columns: columns, span: span)).trimmingSuffixSpaces)
        var ends: [(offset: Double, line: String)] = []
        for identifier in order {
            var lane = [Character](repeating: " ", count: columns)
            var weights = [[AppState: Double]](repeating: [:], count: columns)
            for item in items where item.app == identifier {
                guard case .state(let state) = item.kind, let end = item.end else { continue }
                let from = item.start.timeIntervalSince(first), to = end.timeIntervalSince(first)
                var column = min(Int(from / step), columns - 1)
                while column < columns {
                    let low = Double(column) * step, high = low + step
                    let overlap = min(to, high) - max(from, low)
                    if overlap > 0 || (from == to && column == min(Int(from / step), columns - 1)) {
                        weights[column][state, default: 0] += max(overlap, 1e-9)
                    }
                    if to <= high { break }
                    column += 1
                }
            }
            for column in 0..<columns {
                if let (state, _) = weights[column].max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key.rawValue < $1.key.rawValue) }),
                   let glyph = glyph(state) {
                    lane[column] = glyph
                }
            }
            for item in items where item.app == identifier && item.kind == .moment(.terminated) {
                let offset = item.start.timeIntervalSince(first)
                let column = min(Int(offset / step), columns - 1)
                let bySystem = item.termination.flatMap(HostExitStatus.init) != nil
                lane[column] = bySystem ? "x" : "|"
                var end = "\(names[identifier]!) at +\(seconds(offset)): "
                if let termination = item.termination {
                    end += "\(termination.namespace)\(termination.formattedCode.map { " " + $0 } ?? "") (\(termination.kind)), \(termination.reason)"
                } else {
                    end += "terminated"
                }
                ends.append((offset, TerminalText.escaping(end)))
            }
            let label = names[identifier]!.padding(toLength: labelWidth, withPad: " ", startingAt: 0)
            lines.append(TerminalText.escaping(label) + String(lane).trimmingSuffixSpaces)
        }
        lines.append("")
        lines.append(legend)
        if !ends.isEmpty {
            lines.append("")
            lines += ends.sorted { $0.offset < $1.offset }.map(\.line)
        }
        return lines
    }

    /// Marks at about every ten columns: `0 s       1.5 s     3 s`.
    private static func axis(columns: Int, span: Double) -> String {
        var text = ""
        var column = 0
        while column < columns {
            let mark = seconds(span * Double(column) / Double(columns))
            guard column + mark.count <= columns else { break }
            text += mark.padding(toLength: min(max(mark.count + 2, 12), columns - column), withPad: " ", startingAt: 0)
            column = text.count
        }
        return text
    }

    private static func seconds(_ value: Double) -> String {
        if value >= 100 || value == value.rounded() { return "\(Int(value.rounded())) s" }
        if value >= 1 { return String(format: "%.1f s", value) }
        return String(format: "%.3f s", value)
    }
}

extension String {
    fileprivate var trimmingSuffixSpaces: String { String(reversed().drop { $0 == " " }.reversed()) }
}
