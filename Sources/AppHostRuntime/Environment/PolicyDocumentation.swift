import Foundation

// How the knobs of `Policy.knobs` read in `apphost launch --help` and in README.md's "Policy"
// table (a test checks that README.md holds exactly `Policy.markdownTable`).

extension PolicyKnob {
    /// The default, as `Policy()` has it: "20 s", "1024 MiB", "never; each is reported".
    public var defaultDescription: String {
        let policy = Policy()
        switch kind {
        case .seconds(let path): return "\(Self.plain(policy[keyPath: path].seconds)) s"
        case .optionalSeconds(let path): return policy[keyPath: path].map { "\(Self.plain($0.seconds)) s" } ?? unsetDefault ?? "none"
        case .count(let path): return "\(policy[keyPath: path])"
        case .optionalCount(let path): return policy[keyPath: path].map { "\($0)" } ?? unsetDefault ?? "none"
        case .mebibytes(let path): return "\(Self.plain(Double(policy[keyPath: path]) / 1_048_576)) MiB"
        case .optionalMebibytes(let path):
            return policy[keyPath: path].map { "\(Self.plain(Double($0) / 1_048_576)) MiB" } ?? unsetDefault ?? "none"
        case .percentOfCore(let path): return "\(Self.plain(policy[keyPath: path])) %"
        case .toggle(let path): return policy[keyPath: path] ? "on" : "off"
        case .capabilityNames(let path), .absolutePaths(let path):
            let list = policy[keyPath: path]
            return list.isEmpty ? "none" : list.joined(separator: ", ")
        case .userRange(let path):
            let range = policy[keyPath: path]
            return "\(range.lowerBound)-\(range.upperBound)"
        }
    }

    /// The name of the flag's value in `--help`: "s", "MiB", "CAP_NAME"; nil for a toggle.
    public var valueName: String? {
        switch kind {
        case .seconds, .optionalSeconds: "s"
        case .count, .optionalCount: "n"
        case .mebibytes, .optionalMebibytes: "MiB"
        case .percentOfCore: "percent"
        case .toggle: nil
        case .capabilityNames: "CAP_NAME"
        case .absolutePaths: "PATH"
        case .userRange: "first-last"
        }
    }

    /// Whether the flag may be given more than once, each adding to a list.
    public var isRepeatable: Bool {
        switch kind {
        case .capabilityNames, .absolutePaths: true
        default: false
        }
    }

    /// The flag's help in `apphost launch --help`: the knob's line and its default.
    public var flagHelp: String {
        "\(help)\(isRepeatable ? "; repeatable" : "") (default: \(defaultDescription))."
    }

    /// How a policy file writes the value, after the key in README.md.
    var fileValue: String {
        switch kind {
        case .seconds, .optionalSeconds: "seconds"
        case .count, .optionalCount: "count"
        case .mebibytes, .optionalMebibytes: "MiB"
        case .percentOfCore: "percent"
        case .toggle: "true/false"
        case .capabilityNames: "array of names"
        case .absolutePaths: "array of absolute paths"
        case .userRange: "\"FIRST-LAST\""
        }
    }

    /// The flag as README.md shows it: "`--allow-capability CAP_NAME` (repeatable)".
    var flagUsage: String {
        switch kind {
        case .toggle: return "`--\(flag)`, `--no-\(flag)`"
        case .capabilityNames, .absolutePaths: return "`--\(flag) \(valueName ?? "")` (repeatable)"
        case .userRange: return "`--\(flag) FIRST-LAST`"
        default: return "`--\(flag)`"
        }
    }

    /// A number without a needless ".0": "30", "0.25".
    private static func plain(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? "\(Int(value))" : "\(value)"
    }
}

extension Policy {
    /// README.md's "Policy" table: one row per knob, in the order of `knobs`.
    public static var markdownTable: String {
        let rows = knobs.map { knob in
            let cells = [knob.help, knob.defaultDescription, knob.flagUsage, "`\(knob.key)` (\(knob.fileValue))"]
            return "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |"
        }
        return (["| knob | default | flag | policy file key (value) |", "|---|---|---|---|"] + rows).joined(separator: "\n")
    }
}
