public import AppHostRuntime

/// Why a `TestHost` could not do what a test asked: a code, one message for the person reading
/// the test's failure, and the last events the host had sent when it happened.
public struct TestHostError: Error, CustomStringConvertible, Sendable {
    /// What went wrong; an open set.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. "timeout".
        public let rawValue: String
        /// A code by name; the static members are the ones TestHost throws.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The apphost binary (or apphost-init beside it) could not be found.
        public static let executableNotFound = Code(rawValue: "executable-not-found")
        /// A bundle, the private directory or the policy file could not be prepared, or the host
        /// could not be started.
        public static let setupFailed = Code(rawValue: "setup-failed")
        /// A bundle is older than the library or the sources it was made from: the test would
        /// run last build's app (`swift package apphost-test` bundles before it tests).
        public static let staleBundle = Code(rawValue: "stale-bundle")
        /// The host ended before it was ready: bad input, or a first app that cannot launch.
        public static let launchFailed = Code(rawValue: "launch-failed")
        /// A command was refused or failed; the message is the host's.
        public static let commandFailed = Code(rawValue: "command-failed")
        /// What was awaited did not happen in time.
        public static let timeout = Code(rawValue: "timeout")
        /// The host is no longer running.
        public static let hostExited = Code(rawValue: "host-exited")
        /// A termination report could not be read.
        public static let unreadableReport = Code(rawValue: "unreadable-report")

        /// The code's name.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// What failed, on what, and what the host said.
    public let message: String
    /// The host's last events (at most 20) when it happened, oldest first.
    public let lastEvents: [HostEvent]

    init(_ message: String, code: Code, lastEvents: [HostEvent] = []) {
        self.code = code
        self.message = message
        self.lastEvents = lastEvents
    }

    /// The message, then the last events as the host prints them.
    public var description: String {
        guard !lastEvents.isEmpty else { return message }
        return message + "\nlast events:\n" + lastEvents.map { "  " + $0.humanLine }.joined(separator: "\n")
    }
}

/// How the host process ended.
public struct HostExit: Sendable, Equatable, CustomStringConvertible {
    /// The exit status, if it exited.
    public var status: Int32?
    /// The signal that ended it, if one did.
    public var signal: Int32?

    /// Whether it exited with status 0.
    public var isSuccess: Bool { status == 0 }

    /// "exited with status 0", "was killed by signal 9".
    public var description: String {
        if let status { return "exited with status \(status)" }
        if let signal { return "was killed by signal \(signal)" }
        return "ended (someone else collected its status)"
    }
}
