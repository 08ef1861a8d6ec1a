// Apple's unified logging by its module name (`import os`): `Logger`, `OSLog`, `OSLogType` and
// `os_log`, so that iOS code logs unchanged. Each message reaches the host as a `log` event, as a
// swift-log record does (AppHostKit's AppHostLogHandler): its level is the os type's (below), its
// label is "SUBSYSTEM/CATEGORY" (docs/porting.md, "Porting iOS code").
//
// os types map to swift-log levels: debug → debug, info → info, default (notice) → notice,
// error → error, fault → critical. Logger's trace is debug, warning is error and critical is
// fault, as Apple documents them. Records below the host's `--log-level` are not sent.
// Implementation-only: a library that imports os behind `#if canImport(os)` (README.md,
// "Porting iOS code") loads this module alone, with Glibc, as Apple's os brings Darwin alone;
// loading AppHostKit would bring Foundation's members into its look-ups, and their symbols into
// programs that do not link Foundation.
@_implementationOnly import AppHostKit
@_implementationOnly import Foundation
@_implementationOnly import Logging

/// A log's type (its level), as os's `OSLogType`. Raw values as Apple's.
public struct OSLogType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// The default type (notice).
    public static let `default` = OSLogType(rawValue: 0x00)
    /// Helpful, not essential.
    public static let info = OSLogType(rawValue: 0x01)
    /// For debugging only.
    public static let debug = OSLogType(rawValue: 0x02)
    /// An error.
    public static let error = OSLogType(rawValue: 0x10)
    /// A fault: a bug.
    public static let fault = OSLogType(rawValue: 0x11)

    /// The swift-log level a record of this type is sent with.
    var level: Logging.Logger.Level {
        switch self {
        case .debug: .debug
        case .info: .info
        case .error: .error
        case .fault: .critical
        default: .notice
        }
    }
}

/// A log, as os's `OSLog`: a subsystem (by convention the bundle identifier) and a category.
public final class OSLog: Sendable {
    /// The subsystem; empty for `.default`.
    public let subsystem: String
    /// The category; empty for `.default`.
    public let category: String
    private let enabled: Bool

    /// A log of `subsystem` and `category`.
    public init(subsystem: String, category: String) {
        self.subsystem = subsystem
        self.category = category
        enabled = true
    }

    private init(disabled: Void) {
        subsystem = ""
        category = ""
        enabled = false
    }

    /// The app's default log: its records are labelled with the app's bundle identifier.
    public static let `default` = OSLog(subsystem: "", category: "")
    /// A log that sends nothing.
    public static let disabled = OSLog(disabled: ())

    /// Whether records of `type` reach the host (the host's `--log-level` decides).
    public func isEnabled(type: OSLogType) -> Bool {
        enabled && AppHostLogHandler(label: label).logLevel <= type.level
    }

    /// "SUBSYSTEM/CATEGORY"; SUBSYSTEM alone without a category; the bundle identifier for the default log.
    var label: String {
        let subsystem = subsystem.isEmpty ? Application.shared.bundleIdentifier : subsystem
        return category.isEmpty ? subsystem : "\(subsystem)/\(category)"
    }

    /// Sends a record through AppHostKit's swift-log backend, whatever swift-log was bootstrapped
    /// with (in a unit test, nothing is).
    func send(_ type: OSLogType, _ message: @autoclosure () -> String) {
        guard enabled else { return }
        let logger = Logging.Logger(label: label) { AppHostLogHandler(label: $0) }
        logger.log(level: type.level, "\(message())")
    }
}

/// How private a value interpolated into a log message is, as os's `OSLogPrivacy`. Accepted and
/// not applied: the host is the developer's own, as a device attached to a debugger shows
/// private values.
public struct OSLogPrivacy: Equatable, Sendable {
    private let name: String
    /// Shown.
    public static let `public` = OSLogPrivacy(name: "public")
    /// Redacted on a device; shown by apphost.
    public static let `private` = OSLogPrivacy(name: "private")
    /// Redacted on a device; shown by apphost.
    public static let sensitive = OSLogPrivacy(name: "sensitive")
    /// The system decides; shown by apphost.
    public static let auto = OSLogPrivacy(name: "auto")
    /// As `.private`, hashed on a device; shown by apphost.
    public static func `private`(mask: OSLogPrivacy.Mask) -> OSLogPrivacy { .private }
    /// As `.sensitive`, hashed on a device; shown by apphost.
    public static func sensitive(mask: OSLogPrivacy.Mask) -> OSLogPrivacy { .sensitive }
    /// As `.auto`, hashed on a device; shown by apphost.
    public static func auto(mask: OSLogPrivacy.Mask) -> OSLogPrivacy { .auto }

    /// How a redacted value is masked on a device.
    public struct Mask: Equatable, Sendable {
        /// Replaced by a hash.
        public static let hash = Mask()
        /// Not masked.
        public static let none = Mask()
    }
}

/// How an interpolated integer is written, as os's `OSLogIntegerFormatting` (a subset).
public struct OSLogIntegerFormatting: Sendable {
    let radix: Int
    let prefix: String
    /// Decimal.
    public static let decimal = OSLogIntegerFormatting(radix: 10, prefix: "")
    /// Lowercase hexadecimal, without a prefix.
    public static let hex = OSLogIntegerFormatting(radix: 16, prefix: "")
    /// Octal, without a prefix.
    public static let octal = OSLogIntegerFormatting(radix: 8, prefix: "")
    /// Decimal (`explicitPositiveSign` and `minDigits` are accepted and not applied).
    public static func decimal(explicitPositiveSign: Bool = false, minDigits: Int = 0) -> OSLogIntegerFormatting { .decimal }
    /// Hexadecimal, with `0x` if `includePrefix`.
    public static func hex(explicitPositiveSign: Bool = false, includePrefix: Bool = false, uppercase: Bool = false, minDigits: Int = 0) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(radix: 16, prefix: includePrefix ? "0x" : "")
    }
}

/// How an interpolated floating-point number is written, as os's `OSLogFloatFormatting` (a subset).
public struct OSLogFloatFormatting: Sendable {
    let precision: Int?
    /// As `description` writes it.
    public static let fixed = OSLogFloatFormatting(precision: nil)
    /// With `precision` digits after the point.
    public static func fixed(precision: Int, explicitPositiveSign: Bool = false) -> OSLogFloatFormatting {
        OSLogFloatFormatting(precision: max(0, min(precision, 64)))
    }
}

/// A log message with interpolated values, as os's `OSLogMessage`: `"saved \(count) notes"`,
/// with `privacy:` and, for numbers, `format:` arguments.
public struct OSLogMessage: ExpressibleByStringInterpolation, ExpressibleByStringLiteral {
    /// The message as the host shows it.
    let text: String

    public init(stringLiteral value: String) { text = value }
    public init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Builds an `OSLogMessage`.
    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 8 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { text += literal }

        /// Any value, as `String(describing:)` writes it.
        public mutating func appendInterpolation<Value>(_ value: @autoclosure () -> Value, privacy: OSLogPrivacy = .auto) {
            text += String(describing: value())
        }

        /// An integer in `format`.
        public mutating func appendInterpolation<Value: BinaryInteger>(
            _ value: @autoclosure () -> Value, format: OSLogIntegerFormatting, privacy: OSLogPrivacy = .auto
        ) {
            let number = value()
            text += (number < 0 ? "-" : "") + format.prefix + String(number.magnitude, radix: format.radix)
        }

        /// A floating-point number in `format`.
        public mutating func appendInterpolation<Value: BinaryFloatingPoint & CVarArg>(
            _ value: @autoclosure () -> Value, format: OSLogFloatFormatting, privacy: OSLogPrivacy = .auto
        ) {
            let number = value()
            text += format.precision.map { String(format: "%.\($0)f", Double(number)) } ?? "\(Double(number))"
        }
    }
}

/// A logger of a subsystem and category, as os's `Logger`.
public struct Logger: Sendable {
    private let log: OSLog

    /// The app's default log (labelled with its bundle identifier).
    public init() { log = .default }
    /// A logger of `subsystem` (by convention the bundle identifier) and `category`.
    public init(subsystem: String, category: String) { log = OSLog(subsystem: subsystem, category: category) }
    /// A logger that writes to `log`.
    public init(_ log: OSLog) { self.log = log }

    /// A record of the default type (notice).
    public func log(_ message: OSLogMessage) { log.send(.default, message.text) }
    /// A record of `level`.
    public func log(level: OSLogType, _ message: OSLogMessage) { log.send(level, message.text) }
    /// Debug.
    public func trace(_ message: OSLogMessage) { log.send(.debug, message.text) }
    /// Debug.
    public func debug(_ message: OSLogMessage) { log.send(.debug, message.text) }
    /// Info.
    public func info(_ message: OSLogMessage) { log.send(.info, message.text) }
    /// Notice (the default type).
    public func notice(_ message: OSLogMessage) { log.send(.default, message.text) }
    /// Error.
    public func warning(_ message: OSLogMessage) { log.send(.error, message.text) }
    /// Error.
    public func error(_ message: OSLogMessage) { log.send(.error, message.text) }
    /// Fault (swift-log's critical).
    public func critical(_ message: OSLogMessage) { log.send(.fault, message.text) }
    /// Fault (swift-log's critical).
    public func fault(_ message: OSLogMessage) { log.send(.fault, message.text) }
}

/// Logs a printf-style message (`%@`, `%d`, `%s`…; `{public}` and `{private}` are accepted and
/// not applied) of `type` to `log`, as os's `os_log`.
public func os_log(_ message: StaticString, log: OSLog = .default, type: OSLogType = .default, _ arguments: any CVarArg...) {
    log.send(type, formatted(message, arguments))
}

/// `os_log(_:log:type:_:)` with the type first, as os writes it.
public func os_log(_ type: OSLogType, log: OSLog = .default, _ message: StaticString, _ arguments: any CVarArg...) {
    log.send(type, formatted(message, arguments))
}

/// Logs an interpolated message of `type` to `log`, as os's `os_log` with an `OSLogMessage`.
public func os_log(_ type: OSLogType = .default, log: OSLog = .default, _ message: OSLogMessage) {
    log.send(type, message.text)
}

/// `message` with its arguments, its privacy annotations (`%{public}@`) dropped. Without
/// arguments only `%%` is replaced: a conversion with nothing to convert must not read memory.
func formatted(_ message: StaticString, _ arguments: [any CVarArg]) -> String {
    let format = message.description.replacingOccurrences(of: #"%\{[^}]*\}"#, with: "%", options: .regularExpression)
    return arguments.isEmpty ? format.replacingOccurrences(of: "%%", with: "%") : String(format: format, arguments: arguments)
}
