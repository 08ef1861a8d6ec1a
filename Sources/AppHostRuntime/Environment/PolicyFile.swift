public import Foundation

// Reading a policy file (`--policy FILE`): a JSON object of `Policy.knobs` keys, decoded by
// JSONDecoder. Foundation's JSONSerialization is not used: on Linux it hands back NSNumbers that
// read 1 and 1.0 as Booleans (so `"backgroundTime": 1` was refused and `"perAppUsers": 1`
// taken for true), and it accepts a trailing comma.

/// One value of a policy file, as JSON wrote it. Each knob's kind decides what it accepts.
enum PolicyFileValue: Codable, Equatable {
    case bool(Bool)
    /// A number, whole or not: JSON does not tell 1 from 1.0.
    case number(Double)
    case string(String)
    case array([PolicyFileValue])
    /// An object or null: no knob takes one.
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // JSONDecoder refuses a number as a Bool and a Bool as a number, so the order is safe.
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([PolicyFileValue].self) {
            self = .array(array)
        } else {
            self = .other
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let flag): try container.encode(flag)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let values): try container.encode(values)
        case .other: try container.encodeNil()
        }
    }

    /// The strings of an array of strings; nil for anything else.
    var strings: [String]? {
        guard case .array(let values) = self else { return nil }
        var strings: [String] = []
        for value in values {
            guard case .string(let string) = value else { return nil }
            strings.append(string)
        }
        return strings
    }
}

extension Policy {
    /// Reads a policy file over the defaults. Malformed JSON (a trailing comma included), unknown
    /// keys and values of the wrong kind are errors of one line naming the file and the key, so
    /// a typo never silently leaves a default in force; an unknown key near a known one names it.
    public static func load(contentsOf url: URL, over base: Policy = Policy()) throws(PolicyError) -> Policy {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw PolicyError("\(url.path): cannot be read: \(error.localizedDescription)")
        }
        let values: [String: PolicyFileValue]
        do {
            // JSONDecoder accepts a trailing comma too; strict JSON does not.
            if let line = trailingCommaLine(data) {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a trailing comma on line \(line)"))
            }
            values = try JSONDecoder().decode([String: PolicyFileValue].self, from: data)
        } catch {
            throw PolicyError("\(url.path): not a JSON object (\(Self.oneLine(error))); see README.md, \"Policy\"")
        }
        var policy = base
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let knob = knobs.first(where: { $0.key == key }) else {
                throw PolicyError("\(url.path): \(unknownKeyMessage(key))")
            }
            guard knob.kind.set(.file(value), in: &policy) else {
                throw PolicyError("\(url.path): \(key) must be \(knob.kind.expectation)")
            }
        }
        policy.lowerBackgroundMemoryLimit(unlessSet: values.keys.contains("backgroundMemoryLimit"))
        try policy.validate()
        return policy
    }

    /// The policy as a policy file: a JSON object with every knob's key (but those of optional
    /// knobs left unset), keys sorted, which `load(contentsOf:)` reads back as this policy.
    /// AppHostTesting hands a test's policy to the host it starts this way.
    public func fileContents() -> Data {
        var values: [String: PolicyFileValue] = [:]
        for knob in Self.knobs {
            values[knob.key] = knob.kind.fileValue(in: self)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // Our own enum of Bools, Doubles, strings and arrays always encodes.
        return (try? encoder.encode(values)) ?? Data("{}".utf8)
    }

    /// "unknown key backgroundTim; did you mean backgroundTime?", or the known keys when no key
    /// is near.
    static func unknownKeyMessage(_ key: String) -> String {
        let keys = knobs.map(\.key)
        if let nearest = NearestName.suggestion(for: key, among: keys) {
            return "unknown key \(key); did you mean \(nearest)?"
        }
        return "unknown key \(key); known keys: \(keys.sorted().joined(separator: ", "))"
    }

    /// The line of the first comma followed (past white space) by `]` or `}` outside a string,
    /// which JSON does not allow; nil if there is none.
    static func trailingCommaLine(_ data: Data) -> Int? {
        var line = 1
        var inString = false
        var escaped = false
        var commaLine: Int?
        for byte in data {
            if byte == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                continue
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if let commaLine { return commaLine }
            case UInt8(ascii: "\""):
                inString = true
            default:
                break
            }
            commaLine = byte == UInt8(ascii: ",") ? line : nil
        }
        return nil
    }

    /// What JSONDecoder found wrong, on one line: "Unexpected character ... around line 1".
    private static func oneLine(_ error: any Error) -> String {
        var text = "\(error)"
        if case DecodingError.dataCorrupted(let context) = error {
            text = context.debugDescription
            if let underlying = context.underlyingError { text += ": \(underlying)" }
        } else if case DecodingError.typeMismatch(_, let context) = error {
            text = context.debugDescription
        }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

extension PolicyKnob.Kind {
    /// The knob's value in `policy` as a policy file writes it; nil for an optional knob that
    /// is not set.
    func fileValue(in policy: Policy) -> PolicyFileValue? {
        switch self {
        case .seconds(let path): .number(policy[keyPath: path].seconds)
        case .optionalSeconds(let path): policy[keyPath: path].map { .number($0.seconds) }
        case .count(let path): .number(Double(policy[keyPath: path]))
        case .optionalCount(let path): policy[keyPath: path].map { .number(Double($0)) }
        case .mebibytes(let path): .number(Double(policy[keyPath: path]) / 1_048_576)
        case .optionalMebibytes(let path): policy[keyPath: path].map { .number(Double($0) / 1_048_576) }
        case .percentOfCore(let path): .number(policy[keyPath: path])
        case .toggle(let path): .bool(policy[keyPath: path])
        case .capabilityNames(let path), .absolutePaths(let path): .array(policy[keyPath: path].map { .string($0) })
        case .userRange(let path): .string("\(policy[keyPath: path].lowerBound)-\(policy[keyPath: path].upperBound)")
        }
    }
}
