#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import CAppHostShims

/// The host: runs installed apps in their own processes and drives each through its life cycle.
///
/// Everything happens on one serial queue: the apps' control sockets, their pidfds, their
/// timers and the commands. Each app's `LifecycleMachine` decides; the supervisor performs the
/// decisions (spawn, send, freeze, kill, report). When every app is suspended, nothing wakes it:
/// there are no polling loops.
public final class Supervisor: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var policy = Policy()
        /// Reports and containers live here.
        public var stateDirectory: URL
        /// Names this host among others on the same machine (cgroups and state are per instance).
        public var instance = "default"
        /// The binary re-executed as each app process (`EXECUTABLE __app-process`).
        public var executable: String
        /// Forces a suspension mechanism; nil picks the best the machine offers.
        public var suspension: SuspensionMechanism?
        /// Copy each app's standard output and error to the host's standard error, line by line.
        public var forwardAppOutput = true
        /// Forces how memory limits are enforced; nil picks the memory cgroup where it can.
        public var memoryEnforcement: MemoryEnforcement?
        /// The simulated power and network at start (`power`, `network` change them).
        public var power: PowerState = .plugged
        public var network: NetworkState = .online
        /// Background app refresh (as iOS's Settings switch): off, no fetch and no refresh task
        /// runs, and BGTaskScheduler's submit throws `unavailable`.
        public var backgroundAppRefresh = true

        public init(stateDirectory: URL, executable: String) {
            self.stateDirectory = stateDirectory
            self.executable = executable
        }
    }

    public let configuration: Configuration
    /// How this host suspends apps, and (when it is not the best) why.
    public let suspensionMechanism: SuspensionMechanism
    public let suspensionNote: String
    /// How this host confines apps, one line for the `started` event and `apphost doctor`.
    public let sandboxNote: String
    /// How this host holds apps to their memory limits.
    public let memoryEnforcement: MemoryEnforcement
    /// The memory all apps together may use (the policy's, or three quarters of the host's).
    public let memoryBudget: UInt64

    let queue = DispatchQueue(label: "apphost.supervisor", qos: .userInitiated)
    /// Where the apps' libraries live: the host runs the same binary, so its own.
    static let libraryDirectories = Landlock.libraryDirectories()
    let clock: any HostClock
    let spawner = SpawnThread()
    let cgroups: CgroupHierarchy?
    var watcher: CgroupEventWatcher?
    let pids: ControllerHierarchy?
    let memory: ControllerHierarchy?
    let sharedResources: SharedResourceCheck
    /// Measures running apps' memory and background CPU; stopped while every app is suspended.
    let sampler: any DispatchSourceTimer
    var samplerRunning = false
    /// A memory-pressure episode under way: warnings sent, kills to follow if they do not help.
    var pressure: MemoryPressure?
    /// Pending BGTaskScheduler requests, fetch intervals and force quits; persisted in the store.
    var schedule: BackgroundSchedule
    let scheduleStore: ScheduleStore
    /// Fires when the next request or fetch becomes due; nothing runs in between (no polling).
    let schedulerTimer: any DispatchSourceTimer
    var power: PowerState
    var network: NetworkState
    var schedulerPassQueued = false
    /// Per-app uids and gids; nil on a non-root host (apps run as the host's user).
    var users: AppUsers?
    let reports: ReportStore
    let observer: @Sendable (HostEvent) -> Void
    var apps: [AppRecord] = []
    var waiters: [Waiter] = []
    var shutdownContinuations: [CheckedContinuation<Void, Never>] = []
    /// Set by `shutdown()`: no app launches after it.
    var isShuttingDown = false
    var groupCounter = 0
    /// Inputs waiting for the machine while another input's actions are performed.
    var inputs: [(AppRecord, AppRun, LifecycleMachine.Input)] = []
    var isDraining = false

    /// Creates a host. `observer` receives every event, on the supervisor's queue.
    public init(
        configuration: Configuration, clock: any HostClock = MonotonicClock(),
        observer: @escaping @Sendable (HostEvent) -> Void
    ) throws {
        try configuration.policy.validate()
        self.configuration = configuration
        self.clock = clock
        self.observer = observer
        reports = ReportStore(stateDirectory: configuration.stateDirectory)
        try FileManager.default.createDirectory(at: configuration.stateDirectory, withIntermediateDirectories: true)

        var note: String
        switch configuration.suspension {
        case .sigstop:
            cgroups = nil
            note = "SIGSTOP (requested)"
        case .cgroupFreezer, nil:
            switch CgroupHierarchy.create(instance: configuration.instance) {
            case .success(let hierarchy):
                cgroups = hierarchy
                note = "cgroup v2 freezer (\(hierarchy.path))"
            case .failure(let unavailable):
                if configuration.suspension == .cgroupFreezer {
                    throw SupervisorError("the cgroup v2 freezer was requested but is unavailable: \(unavailable.reason)")
                }
                cgroups = nil
                note = "SIGSTOP, degraded: \(unavailable.reason)"
            }
        }
        if cgroups != nil {
            watcher = CgroupEventWatcher(queue: queue)
            if watcher == nil { note += "; inotify unavailable" }
        }
        suspensionMechanism = cgroups != nil && watcher != nil ? .cgroupFreezer : .sigstop
        suspensionNote = note

        pids = ControllerHierarchy.create(controller: "pids", instance: configuration.instance)
        let policy = configuration.policy
        memory = configuration.memoryEnforcement == .sampling ? nil : ControllerHierarchy.create(controller: "memory", instance: configuration.instance)
        if configuration.memoryEnforcement == .cgroup && memory == nil {
            pids?.remove()
            cgroups?.remove()
            throw SupervisorError("the memory cgroup was requested but the cgroup v1 memory controller is not mounted or not writable here")
        }
        memoryEnforcement = memory != nil ? .cgroup : .sampling
        memoryBudget = policy.memoryBudget ?? MemoryFootprint.hostCapacity() / 4 * 3
        sharedResources = SharedResourceCheck(
            groupsDirectory: configuration.stateDirectory.resolvingSymlinksInPath().appendingPathComponent("groups").path,
            declared: policy.sharedResources)
        sampler = DispatchSource.makeTimerSource(queue: queue)
        schedulerTimer = DispatchSource.makeTimerSource(queue: queue)
        power = configuration.power
        network = configuration.network
        scheduleStore = ScheduleStore(stateDirectory: configuration.stateDirectory)
        let (loaded, storeWarning) = scheduleStore.load()
        schedule = loaded
        if let storeWarning {
            let warning = HostEvent(time: Date(), event: "warning", detail: storeWarning)
            queue.async { observer(warning) }
        }
        if geteuid() == 0 && policy.perAppUsers {
            if let reason = AppUsers.unreachableReason(configuration.stateDirectory.appendingPathComponent("containers").path) {
                throw SupervisorError(
                    "app users cannot reach their containers in \(configuration.stateDirectory.path): \(reason); "
                        + "choose another --state-dir (the default for root is /var/lib/apphost/INSTANCE) or run apps as root with --no-app-users")
            }
            users = AppUsers(stateDirectory: configuration.stateDirectory, range: policy.appUserRange)
        }
        var sandbox = [Seccomp.notificationAvailable ? "seccomp (violations reported)" : "seccomp, degraded: no user notification, so refusals are not reported"]
        let landlock = Landlock.abiVersion
        sandbox.append(landlock > 0 ? "Landlock ABI \(landlock)" : "no Landlock, degraded: file access is limited only by permissions")
        sandbox.append(users != nil
            ? "per-app users \(policy.appUserRange.lowerBound)-\(policy.appUserRange.upperBound)"
            : "apps run as uid \(geteuid())\(geteuid() == 0 ? " (per-app users off)" : "")")
        sandbox.append(pids != nil
            ? "pids cgroup (\(policy.processLimit) tasks)"
            : users != nil ? "RLIMIT_NPROC (\(policy.processLimit) tasks)" : "no process limit, degraded: no pids cgroup and no per-app user")
        sandboxNote = sandbox.joined(separator: ", ")
        let memoryNote = (memoryEnforcement == .cgroup
            ? "limits by the memory cgroup" : "limits by sampling every \(policy.resourceSampleInterval.formatted)\(configuration.memoryEnforcement == .sampling ? " (requested)" : ", degraded: no writable cgroup v1 memory controller")")
            + " (\(policy.foregroundMemoryLimit.mebibytes) foreground, \(policy.backgroundMemoryLimit.mebibytes) background), budget \(memoryBudget.mebibytes)"
        let pending = loaded.apps.values.reduce(0) { $0 + $1.requests.count }
        let backgroundNote = "power \(configuration.power.rawValue), network \(configuration.network.rawValue), "
            + "background app refresh \(configuration.backgroundAppRefresh ? "on" : "off"), \(pending) pending task request\(pending == 1 ? "" : "s")"
        let started = HostEvent(
            time: Date(), event: "started",
            detail: "suspension: \(note); sandbox: \(sandboxNote); memory: \(memoryNote); background: \(backgroundNote)")
        queue.async { observer(started) }
        for path in policy.sharedResources where access(path, F_OK) != 0 {
            let warning = HostEvent(time: Date(), event: "warning", detail: "the shared resource \(path) does not exist (yet); it is checked at each suspension")
            queue.async { observer(warning) }
        }
        sampler.setEventHandler { [weak self] in self?.sample() }
        sampler.schedule(deadline: .distantFuture)
        sampler.activate()
        schedulerTimer.setEventHandler { [weak self] in self?.runDueWork() }
        schedulerTimer.schedule(deadline: .distantFuture)
        schedulerTimer.activate()
    }

    deinit {
        sampler.cancel()
        schedulerTimer.cancel()
        cgroups?.remove()
        pids?.remove()
        memory?.remove()
    }

    // MARK: Commands

    /// Makes an app known to the host. It does not launch it.
    public func install(_ bundle: AppBundle) throws {
        try queue.sync {
            for name in bundle.capabilities where !configuration.policy.allowedCapabilities.contains(name) {
                throw SupervisorError(
                    "\(bundle.url.lastPathComponent) asks for \(name), which this host's policy does not allow; "
                        + "allow it with --allow-capability \(name) or the policy's allowedCapabilities")
            }
            if users != nil, let reason = AppUsers.unreachableReason(bundle.pluginURL.resolvingSymlinksInPath().path) {
                throw SupervisorError(
                    "\(bundle.url.lastPathComponent) cannot be loaded by its app user: \(reason); "
                        + "move the bundle or run apps as root with --no-app-users")
            }
            if let other = apps.first(where: { $0.bundle.identifier == bundle.identifier }) {
                throw SupervisorError("\(bundle.url.lastPathComponent) and \(other.bundle.url.lastPathComponent) have the same CFBundleIdentifier \(bundle.identifier)")
            }
            apps.append(AppRecord(bundle: bundle))
            queueSchedulerPass()
        }
    }

    /// The installed apps' bundles, in installation order.
    public var bundles: [AppBundle] { queue.sync { apps.map(\.bundle) } }

    /// Launches an app that is not running: to the foreground (sending the current foreground
    /// app to the background) or directly into the background.
    public func launch(_ name: String, kind: LaunchKind) throws {
        try queue.sync {
            let record = try app(named: name)
            if record.run?.machine.isAlive == true { throw SupervisorError("\(record.bundle.name) is already running") }
            if kind == .foreground {
                sendForegroundAppAway(except: record)
                userOpened(record)
            }
            start(record, kind: kind, reason: kind == .foreground ? "user" : "background")
        }
    }

    /// Brings an app to the foreground, launching it if it is not running (`open APP`).
    public func open(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            sendForegroundAppAway(except: record)
            userOpened(record)
            if let run = record.run, run.machine.isAlive {
                handle(record, run, .moveToForeground)
            } else {
                start(record, kind: .foreground, reason: "user")
            }
        }
    }

    /// Launches an app into the background (sequence 5), or resumes a suspended one there
    /// (sequence 6); once its work and grants end it is suspended again (`wake APP`).
    public func wake(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            guard let run = record.run, run.machine.isAlive else {
                start(record, kind: .background, reason: "background")
                return
            }
            guard run.machine.state == .suspended else {
                throw SupervisorError("\(record.bundle.name) is \(run.machine.state.rawValue), not suspended")
            }
            record.backgroundWakeups += 1
            handle(record, run, .wakeInBackground)
        }
    }

    /// Sends the foreground app to the background (`home`).
    public func home() {
        queue.sync { sendForegroundAppAway(except: nil) }
    }

    /// Interrupts the foreground app, for `duration` or until `open`/`home` (`interrupt APP`).
    public func interrupt(_ name: String, for duration: Duration?) throws {
        try queue.sync {
            let record = try app(named: name)
            guard let run = record.run, run.machine.isAlive, run.machine.isInForeground else {
                throw SupervisorError("\(record.bundle.name) is not in the foreground")
            }
            handle(record, run, .interrupt(duration))
        }
    }

    /// Terminates an app (`terminate APP`): `applicationWillTerminate` if it runs, nothing if it
    /// is suspended (a force quit).
    public func terminate(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            guard let run = record.run, run.machine.isAlive else {
                throw SupervisorError("\(record.bundle.name) is not running")
            }
            handle(record, run, .terminate(byUser: true))
        }
    }

    /// Sends `applicationDidReceiveMemoryWarning` to the named app, or to every running app.
    public func memoryWarning(_ name: String?) throws {
        try queue.sync {
            let targets = try name.map { name in [try app(named: name)] } ?? apps
            for record in targets {
                if let run = record.run, run.machine.isAlive { handle(record, run, .memoryWarning) }
            }
        }
    }

    /// Simulates memory running short (`memory-pressure [MIB]`): running apps get
    /// `applicationDidReceiveMemoryWarning`; after the policy's grace, apps are ended without a
    /// callback (jetsam "vm-pageshortage"), suspended ones least recently used first and the
    /// foreground app last, until all apps together use at most `target` bytes. Without a
    /// target, every suspended app is ended and no running one.
    public func memoryPressure(target: UInt64?) {
        queue.sync {
            let usage = measureMemory()
            let running = apps.compactMap { record -> UInt64? in
                guard let run = record.run, run.machine.isLive, run.machine.state != .suspended
                else { return nil }
                return run.memory
            }.reduce(0, +)
            beginPressure(target: target ?? running, usage: usage, cause: target.map { "memory-pressure \($0.mebibytes)" } ?? "memory-pressure")
        }
    }

    /// Waits until the app is in `state`; false if `timeout` passes first.
    public func wait(for name: String, state: AppState, timeout: Duration) async throws -> Bool {
        let record = try queue.sync { try app(named: name) }
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                if currentState(of: record) == state {
                    continuation.resume(returning: true)
                    return
                }
                let waiter = Waiter(record: record, state: state, continuation: continuation)
                waiters.append(waiter)
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds))) { [self] in
                    guard let index = waiters.firstIndex(where: { $0 === waiter }) else { return }
                    waiters.remove(at: index)
                    continuation.resume(returning: false)
                }
            }
        }
    }

    /// The state of every installed app, for `ps`.
    public func status() -> [AppStatus] {
        queue.sync {
            let now = clock.now
            return apps.map { record in
                let run = record.run
                // CPU time since the last state change counts towards the current state.
                var cpuForeground = run?.cpuForeground ?? .zero
                var cpuBackground = run?.cpuBackground ?? .zero
                if let run, let pid = run.process?.pid, run.machine.isAlive, let total = AppProcessSpawner.cpuTime(pid: pid) {
                    let recent = max(.zero, total - run.cpuSampled)
                    if run.lastState == .background || run.lastState == .suspended { cpuBackground += recent } else { cpuForeground += recent }
                }
                let footprint = run.flatMap { $0.machine.isAlive ? MemoryFootprint.of(processes(of: $0)) : nil }
                return AppStatus(
                    name: record.bundle.name, identifier: record.bundle.identifier,
                    pid: run?.process?.pid, state: currentState(of: record),
                    timeInState: run.map { $0.stateSince.duration(to: now) } ?? .zero,
                    openBackgroundTasks: run?.machine.openTasks.count ?? 0,
                    backgroundTimeRemaining: run?.machine.backgroundTimeRemaining(at: now),
                    cpuForeground: cpuForeground, cpuBackground: cpuBackground,
                    violations: run?.violationCount ?? 0,
                    memory: footprint ?? run?.memory ?? 0,
                    peakMemory: max(run?.peakMemory ?? 0, footprint ?? 0),
                    backgroundWakeups: record.backgroundWakeups,
                    snapshot: run?.snapshot)
            }
        }
    }

    /// Terminates every running app as sequence 7 says and returns when all have ended; then
    /// removes the host's cgroup. No app launches after this.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                isShuttingDown = true
                shutdownContinuations.append(continuation)
                for record in apps {
                    if let run = record.run, run.machine.isAlive { handle(record, run, .terminate(byUser: false)) }
                }
                resumeShutdownIfDone()
            }
        }
    }

    /// Kills every app process at once, without callbacks (a second Ctrl-C).
    public func killAll() {
        queue.sync {
            for record in apps {
                if let run = record.run, run.machine.isAlive { handle(record, run, .abort) }
            }
        }
    }
}
