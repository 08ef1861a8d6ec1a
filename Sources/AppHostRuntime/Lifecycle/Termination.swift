/// The namespace of a termination code, as in iOS crash reports. An open set.
public struct TerminationNamespace: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Watchdog kills (0x8badf00d).
    public static let frontBoard = TerminationNamespace(rawValue: "FRONTBOARD")
    /// Background-time, background-work, VoIP and resource rules (0x2182bad2, 0x2182bad4, 0xbada5e47,
    /// 0xdead10cc, 0xbaadca11, 0xbad22222).
    public static let runningBoard = TerminationNamespace(rawValue: "RUNNINGBOARD")
    /// The app died of a signal it did not get from the host; the code is the signal number.
    public static let signal = TerminationNamespace(rawValue: "SIGNAL")
    /// The app's process exited by itself; the code is its exit status.
    public static let exit = TerminationNamespace(rawValue: "EXIT")
    /// The user ended the app (`terminate APP`).
    public static let user = TerminationNamespace(rawValue: "USER")
    /// The host ended the app: it shut down, the app could not launch, or it broke the protocol.
    public static let host = TerminationNamespace(rawValue: "HOST")
    /// The sandbox ended the app; the code is the signal it was killed with (SIGSYS).
    public static let sandbox = TerminationNamespace(rawValue: "SANDBOX")
    /// The memory rules ended the app, as iOS's jetsam: the kind says which ("per-process-limit",
    /// "vm-pageshortage").
    public static let jetsam = TerminationNamespace(rawValue: "JETSAM")
    /// A resource-use rule ended the app, as an iOS EXC_RESOURCE report (CPU in the background).
    public static let resource = TerminationNamespace(rawValue: "EXC_RESOURCE")

    public var description: String { rawValue }
}

/// A termination code of the spec, printed in hex.
public struct TerminationCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// "ate bad food": a watchdog overrun.
    public static let watchdog = TerminationCode(rawValue: 0x8bad_f00d)
    /// Background tasks still open after the background time and its grace period.
    public static let backgroundTimeExhausted = TerminationCode(rawValue: 0x2182_bad2)
    /// More open background tasks than the policy allows.
    public static let tooManyBackgroundTasks = TerminationCode(rawValue: 0xbada_5e47)
    /// "dead lock": a file lock in an app-group container, or a declared shared resource, held
    /// when the app would have been suspended.
    public static let sharedResourceHeld = TerminationCode(rawValue: 0xdead_10cc)
    /// Background work not completed in time: a fetch or remote notification's completion
    /// handler not called, a BGTaskScheduler task not completed after its expiration.
    public static let backgroundWorkOverrun = TerminationCode(rawValue: 0x2182_bad4)
    /// A background URL session's events were not completed in time: the completion handler of
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)` was not called.
    public static let backgroundURLSessionOverrun = TerminationCode(rawValue: 0x2182_bad3)
    /// "bad disc": a suspended app ended while its caches are reclaimed under storage pressure.
    public static let cachesReclaimed = TerminationCode(rawValue: 0xbadd_d15c)
    /// "bad call": a VoIP push callback returned without reporting an incoming call to CallKit.
    public static let voipCallNotReported = TerminationCode(rawValue: 0xbaad_ca11)
    /// A VoIP app resumed in the background more often than the policy allows.
    public static let voipResumedTooOften = TerminationCode(rawValue: 0xbad2_2222)

    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// Why an app's process ended: who decided it, the code, and one line for a person.
public struct Termination: Sendable, Equatable {
    /// A machine-readable category, for filtering reports.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let watchdog = Kind(rawValue: "watchdog")
        public static let backgroundTime = Kind(rawValue: "background-time")
        public static let tooManyBackgroundTasks = Kind(rawValue: "too-many-background-tasks")
        public static let crash = Kind(rawValue: "crash")
        public static let exit = Kind(rawValue: "exit")
        public static let launchFailed = Kind(rawValue: "launch-failed")
        public static let protocolViolation = Kind(rawValue: "protocol-violation")
        /// `terminate APP` of a running app, after `applicationWillTerminate` returned.
        public static let userTerminated = Kind(rawValue: "user-terminated")
        /// `terminate APP` of a suspended app: no callback, as iOS's force quit.
        public static let forceQuit = Kind(rawValue: "force-quit")
        public static let hostShutdown = Kind(rawValue: "host-shutdown")
        /// A dangerous system call (ptrace, mount, bpf, a new namespace…): killed by SIGSYS.
        public static let forbiddenSyscall = Kind(rawValue: "forbidden-syscall")
        /// More refused system calls than the policy's maximumViolations.
        public static let sandboxViolations = Kind(rawValue: "sandbox-violations")
        /// A lock in an app-group container or a declared shared resource held at suspension.
        public static let sharedResource = Kind(rawValue: "shared-resource")
        /// Over its memory limit (foreground or background): jetsam's "per-process-limit".
        public static let perProcessLimit = Kind(rawValue: "per-process-limit")
        /// Ended to bring the apps under the host's memory budget: jetsam's "vm-pageshortage".
        public static let pageShortage = Kind(rawValue: "vm-pageshortage")
        /// More CPU in the background than the policy allows: EXC_RESOURCE CPU.
        public static let cpuResource = Kind(rawValue: "cpu")
        /// `application(_:performFetchWithCompletionHandler:)`'s handler not called in time.
        public static let backgroundFetch = Kind(rawValue: "background-fetch")
        /// A background remote notification's completion handler not called in time.
        public static let remoteNotification = Kind(rawValue: "remote-notification")
        /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`'s handler not called in time.
        public static let backgroundURLSession = Kind(rawValue: "background-url-session")
        /// A BGTaskScheduler task not completed within the grace after its expiration.
        public static let backgroundTask = Kind(rawValue: "bg-task")
        /// A BGTaskScheduler launch handler registered twice, or after launching finished.
        public static let taskRegistration = Kind(rawValue: "bg-task-registration")
        /// The host could not verify that every thread of the app stopped within the policy's
        /// `suspendTimeout`, so it could not be suspended.
        public static let suspensionFailed = Kind(rawValue: "suspension-failed")
        /// Ended while suspended so that its caches and temporary files could be purged under
        /// storage pressure (0xbaddd15c).
        public static let storagePressure = Kind(rawValue: "storage-pressure")
        /// A VoIP push callback returned without reporting a call (0xbaadca11).
        public static let voipCallNotReported = Kind(rawValue: "voip-call-not-reported")
        /// Resumed by VoIP pushes more than `voipResumeLimit` times in `voipResumeWindow` (0xbad22222).
        public static let voipResumedTooOften = Kind(rawValue: "voip-resumed-too-often")

        public var description: String { rawValue }
    }

    public var kind: Kind
    public var namespace: TerminationNamespace
    /// The spec's code, a signal number or an exit status; nil where none applies.
    public var code: UInt64?
    public var reason: String

    public init(kind: Kind, namespace: TerminationNamespace, code: UInt64?, reason: String) {
        self.kind = kind
        self.namespace = namespace
        self.code = code
        self.reason = reason
    }

    static func watchdog(_ reason: String) -> Termination {
        Termination(kind: .watchdog, namespace: .frontBoard, code: TerminationCode.watchdog.rawValue, reason: reason)
    }

    /// Whether this counts as a crash: the app ended without the host deciding it.
    public var isCrash: Bool { kind == .crash || kind == .exit }

    /// The code as printed in reports: hex for the spec's codes, decimal for signals and statuses.
    public var formattedCode: String? {
        guard let code else { return nil }
        switch namespace {
        case .signal, .exit, .sandbox: return String(code)
        default: return TerminationCode(rawValue: code).description
        }
    }
}

/// How the kernel reported the end of an app's process.
public struct ProcessExit: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32, coreDumped: Bool)
    }

    public var status: Status
    /// CPU time of the whole process, from its rusage.
    public var userTime: Duration
    public var systemTime: Duration
    /// Peak resident memory, from its rusage.
    public var maximumResidentBytes: UInt64

    public init(status: Status, userTime: Duration = .zero, systemTime: Duration = .zero, maximumResidentBytes: UInt64 = 0) {
        self.status = status
        self.userTime = userTime
        self.systemTime = systemTime
        self.maximumResidentBytes = maximumResidentBytes
    }

    public var description: String {
        switch status {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let signal, let core): "killed by \(signalName(signal))\(core ? " (core dumped)" : "")"
        }
    }
}

/// "SIGSEGV" for 11.
public func signalName(_ signal: Int32) -> String {
    let names: [Int32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
        8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
        14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS",
    ]
    return names[signal] ?? "signal \(signal)"
}

extension Termination {
    /// Whether the user ended the app (`terminate APP`), as iOS's force quit from the app
    /// switcher: whether it ran `applicationWillTerminate` or was suspended and got no callback.
    /// iOS does not wake it in the background again until the user opens it.
    public var isUserForceQuit: Bool { kind == .forceQuit || kind == .userTerminated }
}
