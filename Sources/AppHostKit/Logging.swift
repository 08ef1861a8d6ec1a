public import Logging
import AppHostProtocol
import AppHostSystem

/// AppHostKit's swift-log backend. The SDK bootstraps swift-log with it before the delegate
/// exists, so every `Logger` an app makes sends its records to the host, which shows them as
/// `log` events with their level and label (and journals and traces them with the rest). Do not
/// call `LoggingSystem.bootstrap` in an app: swift-log allows it once per process.
///
/// The least level is the host's `--log-level` (info unless set); a `Logger` may change its own.
/// Metadata is appended to the message as `key=value`, sorted by key. Outside a host (a unit
/// test), records go to standard error as `label level: message`.
public struct AppHostLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String) {
        self.label = label
        logLevel = hostLink.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? .info
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadataProvider?.get() ?? [:]
        all.merge(metadata) { $1 }
        all.merge(event.metadata ?? [:]) { $1 }
        var text = event.message.description
        if !all.isEmpty { text += " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
        if hostLink.isConnected {
            hostLink.send(.log(level: event.level.rawValue, label: label, message: text))
        } else {
            writeStandardError("\(label) \(event.level.rawValue): \(text)\n")
        }
    }
}
