/// Identifies a request for background time, as `UIBackgroundTaskIdentifier` does.
public struct BackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Returned when the app cannot get background time; passing it to `endBackgroundTask` is harmless.
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)

    public var description: String { "BackgroundTaskIdentifier(\(rawValue))" }
}
