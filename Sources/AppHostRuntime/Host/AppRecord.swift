#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import CAppHostShims

/// What `ps` shows of one app.
public struct AppStatus: Sendable {
    public var name: String
    public var identifier: String
    public var pid: Int32?
    public var state: AppState
    public var timeInState: Duration
    public var openBackgroundTasks: Int
    public var backgroundTimeRemaining: Duration?
    public var cpuForeground: Duration
    public var cpuBackground: Duration
    /// System calls the sandbox refused.
    public var violations: Int
    /// Resident anonymous memory now (the last measurement, once the app has ended), in bytes.
    public var memory: UInt64
    /// The most memory measured in this run, in bytes.
    public var peakMemory: UInt64
    /// Launches into the background and resumptions there, since the host started.
    public var backgroundWakeups: Int
    public var snapshot: String?
}

/// A system call the sandbox refused, for events, `ps` and reports.
public struct SandboxViolation: Sendable {
    public var time: Date
    /// "socket(AF_INET)", "ptrace", …
    public var call: String
    /// The app's state when it made the call.
    public var state: AppState
    /// Whether the call was a dangerous one, which ended the app.
    public var fatal: Bool
}

/// A command the host cannot carry out, or a host that cannot start.
public struct SupervisorError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

// The classes below are touched only on the supervisor's queue, hence @unchecked Sendable.

/// An installed app: its bundle and, once launched, its current run.
final class AppRecord: @unchecked Sendable {
    let bundle: AppBundle
    var run: AppRun?
    /// Launches into the background and resumptions there, since the host started.
    var backgroundWakeups = 0

    init(bundle: AppBundle) { self.bundle = bundle }
}

/// One process of an app, from launch to its report.
final class AppRun: @unchecked Sendable {
    var machine: LifecycleMachine
    /// The app's process and all the host holds for it, once spawned.
    var process: AppProcess?
    /// The app's memory at the last measurement, and the most measured.
    var memory: UInt64 = 0
    var peakMemory: UInt64 = 0
    /// When the app last stopped running (was suspended): the order of memory-pressure kills.
    var lastRunning: HostInstant
    /// CPU time samples while in the background, within the policy's window.
    var backgroundCPU: [(at: HostInstant, total: Duration)] = []
    /// What it held when it would have been suspended (0xdead10cc).
    var held: [HeldResource] = []
    var backgroundTimeRemainingAtEnd: Duration?
    var violationCount = 0
    /// BGTaskScheduler identifiers the app registered a launch handler for in this run.
    var registeredTasks: Set<String> = []
    /// The latest violations (at most 32).
    var violations: [SandboxViolation] = []
    let timer: any DispatchSourceTimer
    let launchedAt = Date()
    var lastState: AppState = .notRunning
    var stateSince: HostInstant
    var snapshot: String?
    /// When the running callback was sent, or the last freeze or thaw began.
    var stepStartedAt: HostInstant?
    var events: [HostEvent] = []
    var cpuForeground: Duration = .zero
    var cpuBackground: Duration = .zero
    var cpuSampled: Duration = .zero

    init(machine: LifecycleMachine, now: HostInstant, queue: DispatchQueue) {
        self.machine = machine
        timer = DispatchSource.makeTimerSource(queue: queue)
        stateSince = now
        lastRunning = now
    }
}

final class Waiter: @unchecked Sendable {
    let record: AppRecord
    let state: AppState
    let continuation: CheckedContinuation<Bool, Never>

    init(record: AppRecord, state: AppState, continuation: CheckedContinuation<Bool, Never>) {
        self.record = record
        self.state = state
        self.continuation = continuation
    }
}
