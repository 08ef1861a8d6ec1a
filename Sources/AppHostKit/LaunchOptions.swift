extension Application {
    /// A key of the launch options dictionary, as `UIApplication.LaunchOptionsKey`.
    public struct LaunchOptionsKey: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Why the app was launched: a `LaunchReason`.
        public static let launchReason = LaunchOptionsKey(rawValue: "launchReason")
    }

    /// Why the host launched the app. An open set: new reasons arrive with new background modes.
    public struct LaunchReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The user opened the app; it comes to the foreground.
        public static let user = LaunchReason(rawValue: "user")
        /// The host launched the app directly into the background (`apphost launch --background`).
        public static let background = LaunchReason(rawValue: "background")

        public var description: String { rawValue }
    }
}
