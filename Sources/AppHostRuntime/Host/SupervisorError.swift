/// A command the host cannot carry out, or a host that cannot start: a code to act on and a
/// message for the person reading it.
public struct SupervisorError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure it is. An open set: new codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No installed app has that name.
        public static let noSuchApp = Code(rawValue: "no-such-app")
        /// The app is not in a state where the command means something (not running, already
        /// running, in the foreground…).
        public static let wrongState = Code(rawValue: "wrong-state")
        /// iOS would refuse it: a missing background mode, a force-quit app, a bad payload.
        public static let refused = Code(rawValue: "refused")
        /// A bundle the host cannot run as given (a clash, a capability the policy forbids).
        public static let invalidBundle = Code(rawValue: "invalid-bundle")
        /// The machine or the host's settings do not give what was asked for.
        public static let unavailable = Code(rawValue: "unavailable")
        /// Another host runs on the same instance (state directory).
        public static let instanceBusy = Code(rawValue: "instance-busy")
        /// An app's transition (a launch, a suspension…) did not end within the time allowed.
        public static let notSettled = Code(rawValue: "not-settled")
        /// The host is shutting down.
        public static let shuttingDown = Code(rawValue: "shutting-down")

        public var description: String { rawValue }
    }

    public var code: Code
    /// One line saying what failed and what to do.
    public var message: String
    /// The errno behind it, where a system call failed.
    public var errno: Int32?

    public init(_ message: String, code: Code, errno: Int32? = nil) {
        self.message = message
        self.code = code
        self.errno = errno
    }

    public var description: String { message }
}
