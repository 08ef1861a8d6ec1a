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
    private static let libraryDirectories = Landlock.libraryDirectories()
    let clock: any HostClock
    private let spawner = SpawnThread()
    private let cgroups: CgroupHierarchy?
    private var watcher: CgroupEventWatcher?
    private let pids: ControllerHierarchy?
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
    private var users: AppUsers?
    private let reports: ReportStore
    private let observer: @Sendable (HostEvent) -> Void
    var apps: [AppRecord] = []
    private var waiters: [Waiter] = []
    private var shutdownContinuations: [CheckedContinuation<Void, Never>] = []
    /// Set by `shutdown()`: no app launches after it.
    private(set) var isShuttingDown = false
    private var groupCounter = 0
    /// Scratch space for reading control sockets, reused: they are read on every callback.
    private var receiveBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Descriptors passed with a read (only the seccomp listener is ever expected).
    private var descriptorBuffer = [Int32](repeating: -1, count: 4)

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
                guard let run = record.run, run.machine.isAlive, run.machine.phase != .terminating, run.machine.state != .suspended
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

    // MARK: Running an app

    func app(named name: String) throws -> AppRecord {
        let lowered = name.lowercased()
        if let record = apps.first(where: {
            $0.bundle.name.lowercased() == lowered || $0.bundle.identifier.lowercased() == lowered
                || $0.bundle.url.lastPathComponent.lowercased() == lowered
        }) {
            return record
        }
        let known = apps.map(\.bundle.name).joined(separator: ", ")
        throw SupervisorError("no app named \(name); installed: \(known.isEmpty ? "none" : known)")
    }

    func currentState(of record: AppRecord) -> AppState {
        record.run?.machine.state ?? .notRunning
    }

    private func sendForegroundAppAway(except keep: AppRecord?) {
        for record in apps where record !== keep {
            if let run = record.run, run.machine.isAlive, run.machine.isInForeground {
                handle(record, run, .moveToBackground)
            }
        }
    }

    /// Launches the app; with `event`, into the background for it.
    func start(_ record: AppRecord, kind: LaunchKind, reason: String, event: BackgroundEvent? = nil) {
        guard !isShuttingDown else { return }
        if kind == .background { record.backgroundWakeups += 1 }
        let run = AppRun(machine: LifecycleMachine(policy: configuration.policy), now: clock.now, queue: queue)
        record.run = run
        run.timer.setEventHandler { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            handle(record, run, .tick)
        }
        run.timer.activate()
        handle(record, run, event.map { .deliver($0, reason: reason) } ?? .launch(kind, reason: reason))
    }

    func handle(_ record: AppRecord, _ run: AppRun, _ input: LifecycleMachine.Input) {
        let actions = run.machine.handle(input, now: clock.now)
        for action in actions { perform(action, record, run) }
        if let deadline = run.machine.nextDeadline {
            let delay = max(0, clock.now.duration(to: deadline).nanoseconds)
            run.timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .microseconds(100))
        } else {
            run.timer.schedule(deadline: .distantFuture)
        }
    }

    private func perform(_ action: LifecycleMachine.Action, _ record: AppRecord, _ run: AppRun) {
        switch action {
        case .spawn(let reason):
            spawn(record, run, reason: reason)
        case .send(let request):
            run.stepStartedAt = clock.now
            send(.callback(request), record, run)
        case .expire(let taskIDs, let remaining):
            send(.expire(taskIDs: taskIDs, remaining: remaining), record, run)
        case .expireWork(let work):
            send(.expireWork(work), record, run)
        case .freeze:
            freeze(record, run)
        case .thaw:
            thaw(run)
        case .kill(let termination):
            // The figures of the report, as they stand when the host decides.
            recordUsage(run)
            run.backgroundTimeRemainingAtEnd = run.machine.backgroundTimeRemaining(at: clock.now)
            kill(run, signal: termination.kind == .forbiddenSyscall ? SIGSYS : SIGKILL)
        case .event(let event):
            emit(event, record, run)
        case .finished(let termination, let exit):
            finish(record, run, termination: termination, exit: exit)
        }
    }

    private func spawn(_ record: AppRecord, _ run: AppRun, reason: String) {
        let bundle = record.bundle
        let policy = configuration.policy
        var sandbox = WireSandbox(entitlements: bundle.entitlements.sorted(), writablePaths: [])
        let container: URL
        do {
            var owner: (uid: UInt32, gid: UInt32)?
            if var table = users {
                defer { users = table }
                let uid = try table.uid(forApp: bundle.identifier)
                owner = (uid, uid)
                sandbox.uid = uid
                sandbox.gid = uid
                sandbox.groups = try bundle.appGroups.map { try table.gid(forGroup: $0) }
            }
            container = try Containers.prepare(for: bundle, in: configuration.stateDirectory, owner: owner)
            var groupContainers: [String: String] = [:]
            for (index, group) in bundle.appGroups.enumerated() {
                groupContainers[group] = try Containers.prepareGroup(group, in: configuration.stateDirectory, gid: sandbox.groups?[index]).path
            }
            sandbox.writablePaths = [container.path] + bundle.appGroups.compactMap { groupContainers[$0] }
            sandbox.groupContainers = groupContainers
        } catch {
            failToSpawn(record, run, "cannot prepare the app's container: \(error)")
            return
        }
        groupCounter += 1
        if let cgroups {
            run.cgroup = try? cgroups.makeGroup(named: "\(bundle.name)-\(groupCounter)")
        }
        run.pidsGroup = pids?.makePidsGroup(named: "\(bundle.name)-\(groupCounter)", limit: policy.processLimit)
        if run.pidsGroup == nil && sandbox.uid != nil { sandbox.processLimit = UInt64(policy.processLimit) }
        if let memory {
            let limit = run.machine.isInForeground ? policy.foregroundMemoryLimit : policy.backgroundMemoryLimit
            run.memoryGroup = MemoryGroup.make(in: memory, named: "\(bundle.name)-\(groupCounter)", limit: limit)
        }
        let executable = configuration.executable
        let environment = Containers.environment(container: container, parent: getpid())
        let result = spawner.run { () -> Result<SpawnedProcess, SystemCallError> in
            Result { () throws(SystemCallError) in
                try AppProcessSpawner.spawn(executable: executable, arguments: [appProcessArgument], environment: environment)
            }
        }
        let process: SpawnedProcess
        switch result {
        case .success(let spawned): process = spawned
        case .failure(let error):
            failToSpawn(record, run, "cannot start the app process: \(error)")
            return
        }
        run.process = process
        if let group = run.pidsGroup, !group.add(pid: process.pid) {
            group.remove()
            run.pidsGroup = nil
        }
        if let memoryGroup = run.memoryGroup {
            if memoryGroup.group.add(pid: process.pid) {
                watchMemory(record, run, memoryGroup)
            } else {
                memoryGroup.remove()
                closeIgnoringErrors(memoryGroup.oomEvents)
                run.memoryGroup = nil
            }
        }
        if memory != nil && run.memoryGroup == nil {
            publish(HostEvent(
                time: Date(), app: bundle.identifier, name: bundle.name, pid: process.pid, event: "warning",
                detail: "no memory cgroup for this process: its memory limits are enforced by sampling"), run: run)
        }
        if let cgroup = run.cgroup {
            // Before the configuration is sent: the runner waits for it, so no app code runs
            // outside the group.
            do {
                try cgroup.add(pid: process.pid)
                run.watch = watcher?.watch(cgroup.eventsPath) { [weak self, weak record, weak run] in
                    guard let self, let record, let run, run.machine.phase == .suspending, cgroup.isFrozen else { return }
                    frozen(record, run)
                }
            } catch {
                cgroup.remove()
                run.cgroup = nil
            }
        }
        watchProcess(record, run, process)
        // Compiled while the app process starts up (about a millisecond, in parallel with it).
        do {
            let entitlements = Set(bundle.entitlements.compactMap(SyscallProfile.Entitlement.init(rawValue:)))
            let program = try Seccomp.compile(SyscallProfile(entitlements: entitlements, ownPID: process.pid))
            sandbox.filter = Data(program.instructions)
            sandbox.filterNotifies = program.notifies
        } catch {
            handle(record, run, .launchFailed("cannot compile the app's seccomp filter: \(error)"))
            return
        }
        sandbox.readablePaths = Self.libraryDirectories
        var configurationMessage = WireConfiguration(
            bundleIdentifier: bundle.identifier, bundleName: bundle.name, bundlePath: bundle.url.path,
            pluginPath: bundle.pluginURL.path, delegateClassName: bundle.delegateClassName,
            containerPath: container.path, launchReason: reason, capabilities: bundle.capabilities,
            openFileLimit: UInt64(policy.openFileLimit), sandbox: sandbox)
        configurationMessage.launchPayload = run.machine.pendingEvents.first { $0.kind == .remoteNotification }?.payload
        configurationMessage.backgroundTasks = backgroundTasksConfiguration(for: bundle)
        send(.configure(configurationMessage), record, run)
    }

    private func failToSpawn(_ record: AppRecord, _ run: AppRun, _ reason: String) {
        handle(record, run, .launchFailed(reason))
        handle(record, run, .exited(ProcessExit(status: .exited(127))))
    }

    private func watchProcess(_ record: AppRecord, _ run: AppRun, _ process: SpawnedProcess) {
        let control = DispatchSource.makeReadSource(fileDescriptor: process.control, queue: queue)
        control.setEventHandler { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            readControl(record, run)
        }
        control.setCancelHandler { closeIgnoringErrors(process.control) }
        control.activate()
        run.control = control

        let exit = DispatchSource.makeReadSource(fileDescriptor: process.pidfd, queue: queue)
        exit.setEventHandler { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            reap(record, run)
        }
        exit.setCancelHandler { closeIgnoringErrors(process.pidfd) }
        exit.activate()
        run.exitSource = exit

        let output = DispatchSource.makeReadSource(fileDescriptor: process.output, queue: queue)
        output.setEventHandler { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            forwardOutput(record, run)
        }
        output.setCancelHandler { closeIgnoringErrors(process.output) }
        output.activate()
        run.outputSource = output
    }

    // MARK: The control socket

    private func send(_ message: HostMessage, _ record: AppRecord, _ run: AppRun) {
        guard let fd = run.process?.control, run.control != nil else { return }
        let bytes = Framing.frame(WireCoding.encode(message))
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                queue.async { [self] in handle(record, run, .protocolViolation("it stopped reading its control socket")) }
            }
            return  // EPIPE and the like: the process is ending; its exit will be observed
        }
    }

    private func readControl(_ record: AppRecord, _ run: AppRun) {
        guard let fd = run.process?.control else { return }
        var closed = false
        while true {
            var received: Int32 = 0
            let count = receiveBuffer.withUnsafeMutableBytes { bytes in
                descriptorBuffer.withUnsafeMutableBufferPointer { fds in
                    apphost_receive_with_fds(fd, bytes.baseAddress, bytes.count, fds.baseAddress, Int32(fds.count), &received)
                }
            }
            if received > 0 { run.receivedDescriptors += descriptorBuffer.prefix(Int(received)) }
            if count > 0 {
                receiveBuffer.withUnsafeBytes { run.decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                // A short read does not mean drained: a read stops where a message carrying a
                // descriptor (the seccomp listener) begins or ends. Read until EAGAIN.
                continue
            }
            if count < 0 && errno == EINTR { continue }
            closed = count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
            break
        }
        do {
            while run.control != nil, let body = try run.decoder.next() {
                let message: AppMessage
                do {
                    message = try WireCoding.decode(AppMessage.self, from: body)
                } catch {
                    let preview = String(decoding: body.prefix(40), as: UTF8.self)
                    violate(record, run, "it sent a frame that is not a message (\(body.count) bytes: \(preview.debugDescription))")
                    return
                }
                receive(message, record, run)
            }
        } catch {
            violate(record, run, "it sent a \(error)")
            return
        }
        if closed {
            run.control?.cancel()
            run.control = nil
            // A dying process closes its socket just before it ends; one that lives on without
            // it can no longer be driven.
            queue.asyncAfter(deadline: .now() + .milliseconds(500)) { [weak self, weak record, weak run] in
                guard let self, let record, let run, run.machine.isAlive, run.machine.phase != .terminating else { return }
                handle(record, run, .protocolViolation("it closed its control socket"))
            }
        }
    }

    private func violate(_ record: AppRecord, _ run: AppRun, _ what: String) {
        run.control?.cancel()
        run.control = nil
        handle(record, run, .protocolViolation(what))
    }

    private func receive(_ message: AppMessage, _ record: AppRecord, _ run: AppRun) {
        switch message {
        case .hello(let version, _):
            if version != wireProtocolVersion {
                violate(record, run, "it speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
            }
        case .ready(let version):
            if version != wireProtocolVersion {
                violate(record, run, "its SDK speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
            } else {
                handle(record, run, .ready)
            }
        case .sandboxed(let listener, let landlockABI, let uid, let seconds):
            sandboxed(record, run, listener: listener, landlockABI: landlockABI, uid: uid, took: .seconds(double: seconds))
        case .launchFailed(let reason): handle(record, run, .launchFailed(reason))
        case .ack(let id, let returned, let snapshot): handle(record, run, .acknowledged(id: id, returned: returned, snapshot: snapshot))
        case .taskBegan(let id, let name): handle(record, run, .taskBegan(id: id, name: name))
        case .taskEnded(let id): handle(record, run, .taskEnded(id: id))
        case .warning(let text): handle(record, run, .warning(text))
        case .fetchInterval, .workCompleted, .registerTask, .submitTask, .cancelTask:
            receiveBackgroundMessage(message, record, run)
        }
    }

    // MARK: The sandbox

    /// The runner confined the app: take its seccomp listener and say how it is confined.
    private func sandboxed(_ record: AppRecord, _ run: AppRun, listener: Bool, landlockABI: Int32, uid: UInt32, took: Duration) {
        var descriptors = run.receivedDescriptors
        run.receivedDescriptors = []
        var notes: [String] = []
        if listener, !descriptors.isEmpty, let syscalls = SyscallListener(fd: descriptors.removeFirst()) {
            run.listener = syscalls
            let source = DispatchSource.makeReadSource(fileDescriptor: syscalls.fd, queue: queue)
            source.setEventHandler { [weak self, weak record, weak run] in
                guard let self, let record, let run else { return }
                drainRefusals(record, run)
            }
            source.activate()
            run.listenerSource = source
            notes.append("seccomp")
        } else {
            notes.append("seccomp, degraded: refusals are not reported (no user notification)")
        }
        descriptors.forEach(closeIgnoringErrors)
        notes.append(landlockABI > 0 ? "Landlock ABI \(landlockABI)" : "no Landlock, degraded: files limited only by permissions")
        notes.append("uid \(uid)")
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid,
            event: "sandboxed", state: currentState(of: record), detail: notes.joined(separator: ", "), elapsed: took), run: run)
    }

    /// Answers every refused call waiting in the app's seccomp listener: EPERM and a violation,
    /// or, for a dangerous call, the end of the app by SIGSYS (the call is never answered, so it
    /// never runs).
    private func drainRefusals(_ record: AppRecord, _ run: AppRun) {
        guard let listener = run.listener else { return }
        while let call = listener.next() {
            let state = currentState(of: record)
            let fatal = call.isDangerous
            run.violationCount += 1
            let violation = SandboxViolation(time: Date(), call: call.description, state: state, fatal: fatal)
            run.violations.append(violation)
            if run.violations.count > 32 { run.violations.removeFirst() }
            publish(HostEvent(
                time: violation.time, app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid,
                event: "violation", state: state,
                detail: fatal ? "\(call.description) is forbidden: killed by SIGSYS" : "\(call.description) refused (EPERM)"), run: run)
            if fatal {
                handle(record, run, .enforce(Termination(
                    kind: .forbiddenSyscall, namespace: .sandbox, code: UInt64(SIGSYS),
                    reason: "made the forbidden system call \(call.description) while \(state.rawValue); killed by SIGSYS")))
                return
            }
            if let limit = configuration.policy.maximumViolations, run.violationCount >= limit {
                // Left unanswered: the call that reaches the limit never returns.
                handle(record, run, .enforce(Termination(
                    kind: .sandboxViolations, namespace: .sandbox, code: nil,
                    reason: "made \(run.violationCount) refused system calls (the policy allows \(limit)); the last: \(call.description)")))
                return
            }
            listener.refuse(call)
        }
    }

    private func forwardOutput(_ record: AppRecord, _ run: AppRun) {
        guard let fd = run.process?.output else { return }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                run.pendingOutput.append(contentsOf: buffer[0..<count])
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                if !run.pendingOutput.isEmpty { run.pendingOutput.append(UInt8(ascii: "\n")) }
                run.outputSource?.cancel()
                run.outputSource = nil
            }
            break
        }
        let prefix = "\(record.bundle.name)[\(run.process?.pid ?? 0)]: "
        while let newline = run.pendingOutput.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: run.pendingOutput[..<newline], as: UTF8.self)
            run.pendingOutput.removeSubrange(...newline)
            if configuration.forwardAppOutput { FileHandle.standardError.write(Data((prefix + line + "\n").utf8)) }
        }
    }

    // MARK: Suspension

    private func freeze(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process else { return }
        run.stepStartedAt = clock.now
        if let cgroup = run.cgroup, run.watch != nil, (try? cgroup.freeze()) != nil {
            // Verified by the inotify watch on cgroup.events, or at once if already frozen.
            if cgroup.awaitFrozen(within: .milliseconds(2)) {
                queue.async { [self] in frozen(record, run) }
            }
            return
        }
        _ = apphost_pidfd_send_signal(process.pidfd, SIGSTOP)
        verifyStopped(record, run, pid: process.pid, attempt: 0)
    }

    /// Every thread is stopped. Before the app counts as suspended, what it holds is checked: it
    /// can no longer take or release anything, so the check sees exactly what it would keep.
    /// 0xdead10cc if it holds something shared (DESIGN.md, Shared resources).
    private func frozen(_ record: AppRecord, _ run: AppRun) {
        guard run.machine.phase == .suspending, !endIfHoldingSharedResources(record, run) else { return }
        handle(record, run, .suspensionVerified)
    }

    /// SIGSTOP takes effect thread by thread; confirm every thread has stopped before reporting.
    private func verifyStopped(_ record: AppRecord, _ run: AppRun, pid: pid_t, attempt: Int) {
        guard run.machine.phase == .suspending else { return }
        if allThreadsStopped(pid: pid) {
            frozen(record, run)
        } else if attempt < 20_000 {
            queue.asyncAfter(deadline: .now() + .microseconds(attempt < 100 ? 20 : 500)) { [self] in
                verifyStopped(record, run, pid: pid, attempt: attempt + 1)
            }
        }
    }

    private func thaw(_ run: AppRun) {
        guard let process = run.process else { return }
        run.stepStartedAt = clock.now
        if let cgroup = run.cgroup, run.watch != nil {
            try? cgroup.thaw()
        } else {
            _ = apphost_pidfd_send_signal(process.pidfd, SIGCONT)
        }
    }

    /// Ends the app's process (and any children) with SIGKILL, or with SIGSYS for a forbidden
    /// call: the app cannot handle SIGSYS (its filter refuses the handler), so it dies of it
    /// unless every thread blocks it; SIGKILL follows if it is still alive 100 ms later.
    private func kill(_ run: AppRun, signal: Int32 = SIGKILL) {
        guard let process = run.process else { return }
        run.control?.cancel()
        run.control = nil
        if signal != SIGKILL {
            _ = apphost_pidfd_send_signal(process.pidfd, signal)
            queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self, weak run] in
                guard let self, let run, run.machine.isAlive else { return }
                kill(run)
            }
            return
        }
        if let cgroup = run.cgroup, cgroup.killAll() { return }
        _ = apphost_pidfd_send_signal(process.pidfd, SIGKILL)
    }

    // MARK: Events, the end, reports

    private func emit(_ event: LifecycleEvent, _ record: AppRecord, _ run: AppRun) {
        // Measured first, so that the bookkeeping below is not counted in the step.
        var elapsed: Duration?
        if WireCallback(rawValue: event.name) != nil || event.name == "suspended" || event.name == "resumed",
           let started = run.stepStartedAt {
            elapsed = started.duration(to: clock.now)
        }
        if event.state != run.lastState {
            account(run, until: AppProcessSpawner.cpuTime(pid: run.process?.pid ?? 0))
            let previous = run.lastState
            run.lastState = event.state
            run.stateSince = clock.now
            stateChanged(record, run, from: previous)
            queueSchedulerPass()
        }
        if event.name == "snapshot" { run.snapshot = event.detail }
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid,
            event: event.name, state: event.state, detail: event.detail, elapsed: elapsed), run: run)
        resolveWaiters(for: record)
    }

    /// Adds the CPU time used since the last sample to the state the app was in.
    private func account(_ run: AppRun, until total: Duration?) {
        guard let total else { return }
        let used = max(.zero, total - run.cpuSampled)
        run.cpuSampled = total
        switch run.lastState {
        case .background, .suspended: run.cpuBackground += used
        default: run.cpuForeground += used
        }
    }

    private func reap(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process else { return }
        var status = apphost_child_status()
        guard apphost_waitid_pidfd(process.pidfd, WEXITED | WNOHANG, &status) == 0, status.code != 0 else { return }
        let exit = ProcessExit(
            status: status.code == CLD_EXITED ? .exited(status.status) : .signaled(status.status, coreDumped: status.code == CLD_DUMPED),
            userTime: .microseconds(status.user_usec), systemTime: .microseconds(status.system_usec),
            maximumResidentBytes: UInt64(max(0, status.max_rss_kib)) * 1024)
        account(run, until: exit.userTime + exit.systemTime)
        if run.machine.phase != .terminating {
            run.backgroundTimeRemainingAtEnd = run.machine.backgroundTimeRemaining(at: clock.now)
        }
        // The pidfd and the socket are separate event sources: read what the app sent before it
        // ended (a launch failure's reason, a last acknowledgement) before handling its end.
        if run.control != nil { readControl(record, run) }
        handle(record, run, .exited(exit))
    }

    private func finish(_ record: AppRecord, _ run: AppRun, termination: Termination, exit: ProcessExit) {
        run.control?.cancel()
        run.control = nil
        run.exitSource?.cancel()
        run.exitSource = nil
        if run.outputSource != nil { forwardOutput(record, run) }
        run.outputSource?.cancel()
        run.outputSource = nil
        if let watch = run.watch { watcher?.unwatch(watch) }
        run.listenerSource?.cancel()
        run.listenerSource = nil
        run.listener = nil
        run.memorySource?.cancel()
        run.memorySource = nil
        run.memoryGroup?.remove()
        run.receivedDescriptors.forEach(closeIgnoringErrors)
        run.receivedDescriptors = []
        // Children of the app (with the spawn entitlement) do not outlive it.
        _ = run.cgroup?.killAll()
        run.pidsGroup?.remove()
        run.cgroup?.remove()
        run.timer.cancel()

        let pid = run.process?.pid ?? 0
        var reportPath: String?
        do {
            reportPath = try reports.write(ReportStore.Contents(
                bundle: record.bundle, pid: pid, time: Date(), launchedAt: run.launchedAt,
                finalState: run.machine.finalState, termination: termination, exit: exit,
                timeInState: run.stateSince.duration(to: clock.now),
                cpuForeground: run.cpuForeground, cpuBackground: run.cpuBackground,
                memory: run.memory, peakMemory: run.peakMemory, backgroundWakeups: record.backgroundWakeups,
                openBackgroundTasks: run.machine.openTasks.sorted { $0.key < $1.key }.map { "#\($0.key) \($0.value)" },
                backgroundTimeRemaining: run.backgroundTimeRemainingAtEnd,
                held: run.held,
                violationCount: run.violationCount, violations: run.violations,
                lastEvents: run.events)).path
        } catch {
            publish(HostEvent(time: Date(), event: "warning", detail: "cannot write the report of \(record.bundle.name): \(error)"), run: nil)
        }
        run.lastState = .terminated
        if termination.kind == .forceQuit || termination.kind == .userTerminated { userForceQuit(record) }
        updateSampler()
        if pressure?.awaiting === record { pressureVictimEnded() }
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: pid, event: "terminated",
            state: .terminated, termination: termination, report: reportPath), run: run)
        resolveWaiters(for: record)
        resumeShutdownIfDone()
    }

    func publish(_ event: HostEvent, run: AppRun?) {
        if let run {
            run.events.append(event)
            if run.events.count > 32 { run.events.removeFirst(run.events.count - 32) }
        }
        observer(event)
    }

    private func resolveWaiters(for record: AppRecord) {
        let state = currentState(of: record)
        waiters.removeAll { waiter in
            guard waiter.record === record, waiter.state == state else { return false }
            waiter.continuation.resume(returning: true)
            return true
        }
    }

    private func resumeShutdownIfDone() {
        guard !shutdownContinuations.isEmpty, !apps.contains(where: { $0.run?.machine.isAlive == true }) else { return }
        let continuations = shutdownContinuations
        shutdownContinuations = []
        cgroups?.remove()
        pids?.remove()
        memory?.remove()
        continuations.forEach { $0.resume() }
    }
}

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
    var process: SpawnedProcess?
    var cgroup: AppCgroup?
    var pidsGroup: ControllerGroup?
    var memoryGroup: MemoryGroup?
    var memorySource: (any DispatchSourceRead)?
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
    /// The seccomp listener, once the runner has handed it over.
    var listener: SyscallListener?
    var listenerSource: (any DispatchSourceRead)?
    /// Descriptors received on the control socket and not yet claimed by a message.
    var receivedDescriptors: [Int32] = []
    var violationCount = 0
    /// BGTaskScheduler identifiers the app registered a launch handler for in this run.
    var registeredTasks: Set<String> = []
    /// The latest violations (at most 32).
    var violations: [SandboxViolation] = []
    var watch: Int32?
    var control: (any DispatchSourceRead)?
    var exitSource: (any DispatchSourceRead)?
    var outputSource: (any DispatchSourceRead)?
    let timer: any DispatchSourceTimer
    var decoder = FrameDecoder()
    var pendingOutput: [UInt8] = []
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

private final class Waiter: @unchecked Sendable {
    let record: AppRecord
    let state: AppState
    let continuation: CheckedContinuation<Bool, Never>

    init(record: AppRecord, state: AppState, continuation: CheckedContinuation<Bool, Never>) {
        self.record = record
        self.state = state
        self.continuation = continuation
    }
}
