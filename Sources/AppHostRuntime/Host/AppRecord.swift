#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import CAppHostShims

// The classes below are touched only on the supervisor's queue, hence @unchecked Sendable.

/// An installed app: its bundle and, once launched, its current run.
final class AppRecord: @unchecked Sendable {
    let id: AppID
    let bundle: AppBundle
    /// Its current run, or its last (ended); `begin` replaces it.
    private(set) var run: AppRun?
    /// How many times it was launched since the host started (the next run's `RunID`).
    private(set) var launches = 0
    /// The background wake-ups of its earlier runs.
    private var earlierWakeups = 0

    /// Launches into the background and resumptions there since the host started, as its
    /// runs' machines count them.
    var backgroundWakeups: Int { earlierWakeups + (run?.machine.backgroundWakeups ?? 0) }

    /// What a command may call it by, lowercased once: its name, identifier and directory name.
    let names: [String]

    init(bundle: AppBundle, id: AppID) {
        self.id = id
        self.bundle = bundle
        names = [bundle.name, bundle.identifier, bundle.url.lastPathComponent].map { $0.lowercased() }
    }

    /// A new run begins (a launch) with `machine`: the last one's wake-ups are kept.
    func begin(_ machine: LifecycleMachine, now: HostInstant) -> AppRun {
        earlierWakeups += run?.machine.backgroundWakeups ?? 0
        let run = AppRun(machine: machine, id: RunID(app: id, launch: launches), now: now)
        launches += 1
        self.run = run
        return run
    }
}

/// One process of an app, from launch to its report.
final class AppRun: @unchecked Sendable {
    var machine: LifecycleMachine
    /// The app's process and all the host holds for it, once spawned.
    var process: AppProcess?
    /// The app's memory at the last measurement, and the most measured.
    private(set) var memory: UInt64 = 0
    private(set) var peakMemory: UInt64 = 0
    /// What it held when it would have been suspended (0xdead10cc).
    var held: [HeldResource] = []
    var backgroundTimeRemainingAtEnd: Duration?
    private(set) var violationCount = 0
    /// BGTaskScheduler identifiers the app registered a launch handler for in this run.
    var registeredTasks: Set<String> = []
    /// The latest violations (at most 32).
    private(set) var violations: [SandboxViolation] = []
    let id: RunID
    /// Whether its process is being started off the loop (ProcessStart): what its machine says
    /// meanwhile is held until the process is known (`launching` says its pid).
    var isSpawning = false
    private var heldEvents: [LifecycleEvent] = []
    let launchedAt = Date()
    var lastState: AppState = .notRunning
    var stateSince: HostInstant
    var snapshot: String?
    /// When the running callback was sent, or the last freeze or thaw began.
    var stepStartedAt: HostInstant?
    /// The latest events (at most 32), for the report: only what the report shows of each, so
    /// that a host of thousands of suspended apps holds little for each.
    private(set) var events: [TerminationReport.Event] = []
    /// The crash record the app process sent, with the memory map read when it came.
    var crashCapture: BacktraceCapture?
    /// A watchdog's request for the main thread's backtrace, and its answer.
    var mainThreadSample: MainThreadSample?
    /// CPU time by the state it was used in, and the total at the last account.
    private(set) var cpuForeground: Duration = .zero
    private(set) var cpuBackground: Duration = .zero
    private(set) var cpuSampled: Duration = .zero

    /// How many of the latest events and violations a run keeps.
    static let historyLength = 32

    init(machine: LifecycleMachine, id: RunID, now: HostInstant) {
        self.machine = machine
        self.id = id
        stateSince = now
    }

    /// A memory measurement.
    func measured(memory bytes: UInt64) {
        memory = bytes
        peakMemory = max(peakMemory, bytes)
    }

    /// Adds the CPU time used since the last account to the state the app was in.
    func account(cpuTotal total: Duration) {
        let used = max(.zero, total - cpuSampled)
        cpuSampled = total
        switch lastState {
        case .background, .suspended: cpuBackground += used
        default: cpuForeground += used
        }
    }

    /// CPU time so far by state, counting what was used since the last account (at `total`)
    /// towards the current state.
    func cpu(upTo total: Duration?) -> (foreground: Duration, background: Duration) {
        let recent = total.map { max(.zero, $0 - cpuSampled) } ?? .zero
        return lastState == .background || lastState == .suspended
            ? (cpuForeground, cpuBackground + recent) : (cpuForeground + recent, cpuBackground)
    }

    /// Holds an event said while the process is being started.
    func hold(_ event: LifecycleEvent) { heldEvents.append(event) }

    func takeHeldEvents() -> [LifecycleEvent] {
        defer { heldEvents = [] }
        return heldEvents
    }

    func remember(_ event: HostEvent) {
        events.append(TerminationReport.Event(time: event.time, event: event.event, state: event.state, detail: event.detail))
        if events.count > Self.historyLength { events.removeFirst(events.count - Self.historyLength) }
    }

    func record(_ violation: SandboxViolation) {
        violationCount += 1
        violations.append(violation)
        if violations.count > Self.historyLength { violations.removeFirst() }
    }
}

/// Where a watchdog's request for the main thread's backtrace stands.
enum MainThreadSample {
    case requested
    case answered(BacktraceCapture)
    /// The kill came first; why the app did not answer.
    case unanswered(String)
}
