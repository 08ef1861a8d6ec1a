import ArgumentParser
import AppHostRuntime
import AppHostSystem
import Foundation
import Logging

/// The host's swift-log backend: one line per record on standard error, `apphost: debug: …`,
/// from `--log-level` up. (The apps' records are events, not these: see AppHostLogHandler.)
struct HostLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        all.merge(event.metadata ?? [:]) { $1 }
        var line = "apphost: \(event.level.rawValue): \(event.message)"
        if !all.isEmpty { line += " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
        writeStandardError(TerminalText.escaping(line) + "\n")
    }

    /// Sends every Logger of the host process to standard error from `level` up.
    static func bootstrap(level: LogLevel) {
        let least = Logger.Level(rawValue: level.rawValue) ?? .info
        LoggingSystem.bootstrap { _ in HostLogHandler(logLevel: least) }
    }
}

extension LogLevel {
    /// `--log-level`'s value, or a clear error naming the levels.
    static func parse(_ text: String) throws -> LogLevel {
        guard let level = LogLevel(rawValue: text) else {
            throw ValidationError("unknown log level \(text); one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }
}
