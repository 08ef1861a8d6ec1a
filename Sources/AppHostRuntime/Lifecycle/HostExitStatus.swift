/// The exit status of `apphost launch`, for scripts and CI: 0 when no app was ended by the
/// system, 1 for bad input, and one status per kind of system end (README.md, "Exit status").
///
/// The first app the system ends decides the status; later ends do not change it.
public enum HostExitStatus: Int32, Sendable, CaseIterable {
    /// Every app ended as asked: `quit`, end of input, a signal, `terminate APP`.
    case success = 0
    /// Bad input: an unusable bundle or policy, an app that cannot launch, a failed command in
    /// `--script`.
    case badInput = 1
    /// An app crashed: it died of a signal of its own or exited by itself (SIGNAL, EXIT).
    case crash = 2
    /// The watchdog ended an app (FRONTBOARD 0x8badf00d).
    case watchdog = 3
    /// A background rule ended an app: background time, background work not completed, too many
    /// background tasks, a shared resource held at suspension, caches reclaimed, a VoIP push
    /// without a call or VoIP resumptions too often (RUNNINGBOARD).
    case backgroundRules = 4
    /// The sandbox ended an app: a forbidden system call or too many refused ones (SANDBOX).
    case sandbox = 5
    /// The memory rules ended an app (JETSAM).
    case jetsam = 6
    /// A resource rule ended an app: CPU in the background (EXC_RESOURCE).
    case resource = 7
    /// The host ended an app for breaking its rules: the control protocol, a task registration,
    /// a suspension it would not complete (HOST).
    case hostRules = 8

    /// The status a termination calls for; nil for ends that were asked for (`terminate`, a
    /// force quit, the host shutting down).
    public init?(_ termination: Termination) {
        switch termination.namespace {
        case .user: return nil
        case .signal, .exit: self = .crash
        case .frontBoard: self = .watchdog
        case .runningBoard: self = .backgroundRules
        case .sandbox: self = .sandbox
        case .jetsam: self = .jetsam
        case .resource: self = .resource
        default:
            switch termination.kind {
            case .hostShutdown: return nil
            case .launchFailed: self = .badInput
            default: self = .hostRules
            }
        }
    }

    /// What the status means, for `apphost launch`'s last line and README's table.
    public var meaning: String {
        switch self {
        case .success: "no app was ended by the system"
        case .badInput: "bad input: a bundle, policy or script line could not be used, or an app could not launch"
        case .crash: "an app crashed (SIGNAL) or exited by itself (EXIT)"
        case .watchdog: "the watchdog ended an app (FRONTBOARD 0x8badf00d)"
        case .backgroundRules: "a background rule ended an app (RUNNINGBOARD)"
        case .sandbox: "the sandbox ended an app (SANDBOX)"
        case .jetsam: "the memory rules ended an app (JETSAM)"
        case .resource: "a resource rule ended an app (EXC_RESOURCE)"
        case .hostRules: "the host ended an app for breaking its rules (HOST)"
        }
    }
}
