#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Dispatch
import AppHostProtocol
import AppHostSystem
import AppHostSandbox
import CAppHostShims

/// The host's loop, behind the `Supervisor` façade: it owns the subsystems and routes between
/// them and the apps' machines.
///
/// Everything happens on one serial queue: the apps' control sockets, their pidfds, their
/// timers and the commands. Each app's `LifecycleMachine` decides an app's life cycle, and each
/// subsystem (Launchpad, Scheduler, TransferDesk, ResourceMonitor, LocationSimulator, SceneStore,
/// UserNotificationService, StorageService, Waiters) decides its own rules; the loop gathers what
/// they need, and performs what they decide (spawn, send, freeze, kill, report). When every app
/// is suspended, nothing wakes it: there are no polling loops.
final class HostLoop: @unchecked Sendable {

    // The loop's own: what it was given and found, its queue, clock, timer and inputs, what
    // reads the apps' sockets, and what it writes (events, reports, stores). Every other
    // property is a subsystem, which owns its state (docs/internals.md); each HostLoop+X file
    // routes between one subsystem and the apps' machines.

    let configuration: Supervisor.Configuration
    /// What the host found at its start: how it suspends, confines and limits apps, how many fit.
    let facts: HostFacts

    let queue = DispatchQueue(label: "apphost.supervisor", qos: .userInitiated)
    /// Reads the apps' control sockets and runs their handlers on `queue` (ControlReader.swift).
    let controlReader: ControlReader
    let clock: any HostClock
    /// The host's one timer: every app's machine's deadline and every subsystem's (the sampler,
    /// the scheduler, a pressure episode's grace, a route's next step, a command's timeout).
    let timers: HostTimers
    /// The launch template, the standby made ahead, the waiting groups, the filters (Launchpad).
    let launchpad: Launchpad
    /// The instance's cgroups and how apps are suspended and limited here.
    let environment: HostEnvironment
    /// BGTaskScheduler requests, fetch intervals, force quits and their conditions (Scheduler).
    let scheduler: Scheduler
    /// Every store of the state directory (HostStores).
    let stores: HostStores
    /// The simulated device's position, its route, the apps' authorizations (LocationSimulator).
    let location: LocationSimulator
    /// Notification authorizations, pending and delivered notifications (UserNotificationService).
    let notifications: UserNotificationService
    /// The scene sessions of the apps that adopt scenes (SceneStore).
    let scenes: SceneStore
    let reports: ReportStore
    /// Held for the host's life: one host per instance.
    let instanceLock: InstanceLock
    let observer: @Sendable (HostEvent) -> Void
    /// The memory budget, a pressure episode, the shared-resource check (ResourceMonitor).
    let resources: ResourceMonitor
    /// The installed apps, by AppID, identifier and name (AppTable).
    let apps = AppTable()
    /// `wait` commands, settles and the shutdown, waiting (Waiters).
    let waiters = Waiters()
    /// The machines' inputs, one at a time (InputQueue).
    let inputs = InputQueue()
    /// The containers' volumes and limits, their owners, storage pressure's purges (StorageService).
    let storage: StorageService
    /// Background URL session transfers: records, what is owed to which run, wakes (TransferDesk).
    let transferDesk: TransferDesk

    /// Creates a host. `observer` receives every event, on the supervisor's queue.
    init(
        configuration: Supervisor.Configuration, clock: any HostClock = MonotonicClock(),
        observer: @escaping @Sendable (HostEvent) -> Void
    ) throws {
        try configuration.policy.validate()
        self.configuration = configuration
        self.clock = clock
        self.observer = observer
        timers = HostTimers(queue: queue, clock: clock)
        reports = ReportStore(stateDirectory: configuration.stateDirectory)
        // Created 0711: app users may pass through to their containers, not list or read.
        try FileManager.default.createDirectory(
            at: configuration.stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o711])
        instanceLock = try InstanceLock(
            stateDirectory: configuration.stateDirectory, reachedWith: "apphost ctl --state-dir \(configuration.stateDirectory.path)")

        let policy = configuration.policy
        // Every check that can refuse to start comes before anything that would need undoing
        // (cgroups, timers): the last is setting up the environment, which undoes itself.
        if geteuid() == 0,
           let reason = AppUsers.unreachableReason(configuration.stateDirectory.appendingPathComponent("containers").path, needsRead: false) {
            throw SupervisorError(
                "app users cannot reach their containers in \(configuration.stateDirectory.path): \(reason); "
                    + "choose another --state-dir (the default for root is /var/lib/apphost/INSTANCE)", code: .unavailable)
        }
        let storageProbe = try StorageProbe.probe(stateDirectory: configuration.stateDirectory, requested: configuration.storageMechanism)
        let storageMechanism = storageProbe.mechanism
        let storageNote = storageProbe.note
        storage = StorageService(
            volumes: StorageVolumes(mechanism: storageProbe.mechanism, stateDirectory: configuration.stateDirectory, device: storageProbe.device),
            users: geteuid() == 0 ? AppUsers(stateDirectory: configuration.stateDirectory, range: policy.appUserRange) : nil, policy: policy)
        // What the host finds wrong at its start, said before its `started` event.
        var warnings = storage.releaseLeftovers().map { "storage: \($0)" }
        environment = try HostEnvironment(
            instance: configuration.instance, suspension: configuration.suspension, memory: configuration.memoryEnforcement,
            namespacesInit: configuration.namespaces ? configuration.initExecutable : nil, queue: queue, timers: timers)
        let suspensionMechanism = environment.suspensionMechanism
        let suspensionNote = environment.suspensionNote
        let memoryEnforcement = environment.memoryEnforcement
        let memoryBudget = policy.memoryBudget ?? MemoryFootprint.hostCapacity() / 4 * 3
        resources = ResourceMonitor(budget: memoryBudget, policy: policy, sharedResources: SharedResourceCheck(
            groupsDirectory: configuration.stateDirectory.resolvingSymlinksInPath().appendingPathComponent("groups").path,
            declared: policy.sharedResources))
        launchpad = Launchpad(
            Launchpad.Context(
                configuration: configuration, environment: environment, spawner: SpawnThread(), queue: queue, timers: timers, clock: clock,
                mountChanges: { [storage] in storage.mountChanges }, isShuttingDown: { [waiters] in waiters.isShuttingDown },
                publish: observer))
        let capacity = HostCapacity.measure(descriptorLimit: HostCapacity.raiseDescriptorLimit())
        controlReader = try ControlReader(queue: queue)
        stores = HostStores(stateDirectory: configuration.stateDirectory)
        location = LocationSimulator(store: stores.location, updateInterval: policy.locationUpdateInterval)
        scenes = SceneStore(store: stores.scenes)
        notifications = UserNotificationService(store: stores.notifications)
        transferDesk = TransferDesk(store: stores.transfers, hasService: configuration.transferRunner != nil)
        scheduler = Scheduler(
            store: stores.schedule, policy: policy, refreshAvailable: configuration.backgroundAppRefresh,
            power: configuration.power, network: configuration.network)
        warnings += [location.loadWarning, scenes.loadWarning, notifications.loadWarning].compactMap { $0 } + transferDesk.loadWarnings
            + [scheduler.loadWarning, storage.usersLoadWarning].compactMap { $0 }
            + scheduler.returned.map { "\($0.app): \($0.identifiers.joined(separator: ", ")) taken to run by a host that ended before the app began \($0.identifiers.count == 1 ? "it" : "them"): pending again" }
        let sandboxNote = environment.sandboxNote(
            users: storage.hasAppUsers ? "\(policy.appUserRange.lowerBound)-\(policy.appUserRange.upperBound)" : nil,
            perAppUsers: policy.perAppUsers, processLimit: policy.processLimit)
        facts = HostFacts(
            suspensionMechanism: suspensionMechanism, suspensionNote: suspensionNote, sandboxNote: sandboxNote,
            memoryEnforcement: memoryEnforcement, memoryBudget: memoryBudget, storageMechanism: storageMechanism, storageNote: storageNote,
            capacity: capacity)
        let memoryNote = environment.memoryNote
            + "\(memoryEnforcement == .sampling ? " every \(policy.resourceSampleInterval.formatted)" : "")"
            + " (\(policy.foregroundMemoryLimit.mebibytes) foreground, \(policy.backgroundMemoryLimit.mebibytes) background), budget \(memoryBudget.mebibytes)"
        let pending = scheduler.pendingCount
        let schedulerClock = scheduler.clock
        let backgroundNote = "power \(configuration.power.rawValue), network \(configuration.network.rawValue), "
            + "background app refresh \(configuration.backgroundAppRefresh ? "on" : "off"), \(pending) pending task request\(pending == 1 ? "" : "s"), "
            + "scheduler clock \(schedulerClock.description)"
        let started = HostEvent(
            time: Date(), event: .started,
            detail: "suspension: \(suspensionNote); sandbox: \(sandboxNote); memory: \(memoryNote); background: \(backgroundNote); "
                + "storage: \(storageMechanism.rawValue), \(storageNote); limits \(policy.storageLimit.mebibytes) per app, "
                + "\(policy.appGroupStorageLimit.mebibytes) per app group\(storageMechanism == .accounting ? ", not enforced" : ""); "
                + "launcher: \(launchpad.note); capacity: \(capacity.description)",
            host: HostSummary(
                launcher: launchpad.launcher.rawValue,
                suspension: suspensionMechanism.rawValue, sandbox: sandboxNote, memory: memoryEnforcement.rawValue,
                storage: storageMechanism.rawValue, instance: configuration.instance, stateDirectory: configuration.stateDirectory.path,
                schedulerClock: schedulerClock.offset == .zero ? nil : HostEvent.isoFormatter.string(from: schedulerClock.now),
                capacity: capacity.apps, capacityBoundBy: capacity.boundBy))
        // Then the event, then what it means for the apps to come.
        let later = (storageProbe.mechanism == .accounting && configuration.storageMechanism == nil ? ["storage: accounting only, \(storageNote)"] : [])
            + policy.sharedResources.filter { access($0, F_OK) != 0 }
                .map { "the shared resource \($0) does not exist (yet); it is checked at each suspension" }
        let events = warnings.map { HostEvent(time: Date(), event: .warning, detail: $0) } + [started]
            + later.map { HostEvent(time: Date(), event: .warning, detail: $0) }
        queue.async { events.forEach(observer) }
        // On the queue, as every later start is, after the events: what the template's start
        // says comes after `started`.
        launchpad.onReturn { [weak self] value in
            guard let self else { return false }
            receive(.launchpad(value))
            return true
        }
        queue.sync { launchpad.start() }
        queue.setSpecific(key: Self.queueKey, value: ())
        // A store that cannot be written says so; what it holds lives on in this host.
        stores.onFailure { [weak self] line in self?.post(.warning(line)) }
        timers.onFire { [weak self] in
            guard let self else { return false }
            receive(.deadlines)
            return true
        }
    }

    deinit {
        // What is queued is written before the instance is given up.
        stores.flush()
        // Now, with the host: a standby the spawn thread hands back later is ended, not kept,
        // and nothing more is made under the groups of this instance (another host of the same
        // process may make its own there).
        // On the loop, where a standby the spawn thread handed back may be being collected.
        if DispatchQueue.getSpecific(key: Self.queueKey) != nil { launchpad.tearDown() } else { queue.sync { launchpad.tearDown() } }
        controlReader.stop()
        environment.remove()
        _ = storage.unmountAll()
    }

    // MARK: Commands

    /// Launches an app: to the foreground (sending the current foreground app to the
    /// background) or directly into the background. An app already running — launched into the
    /// background by the scheduler, a fetch or a push before this launch — is opened instead
    /// (sequence 3) by a foreground launch and left where it is by a background one.
    func launch(_ name: String, kind: LaunchKind) throws {
        try queue.sync {
            let record = try app(named: name)
            if kind == .foreground {
                open(record)
            } else if record.run?.machine.isAlive != true {
                start(record, kind: .background, reason: "background")
            }
        }
    }

    /// Brings an app to the foreground, launching it if it is not running (`open APP`).
    func open(_ name: String) throws {
        try queue.sync { open(try app(named: name)) }
    }

    func open(_ record: AppRecord) {
        sendForegroundAppAway(except: record)
        userOpened(record)
        if let run = record.run, run.machine.isAlive {
            handle(record, run, .moveToForeground)
        } else {
            start(record, kind: .foreground, reason: "user")
        }
    }

    /// Launches an app into the background (sequence 5), or resumes a suspended one there
    /// (sequence 6); once its work and grants end it is suspended again (`wake APP`).
    func wake(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            guard let run = record.run, run.machine.isAlive else {
                start(record, kind: .background, reason: "background")
                return
            }
            try command(.wakeInBackground, to: record)
        }
    }

    /// Waits until the app is in `state`; false if `timeout` passes first.
    func wait(for name: String, state: AppState, timeout: Duration) async throws -> Bool {
        let record = try queue.sync { try app(named: name) }
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                if currentState(of: record) == state {
                    continuation.resume(returning: true)
                    return
                }
                let number = waiters.wait(for: record.id, state: state, continuation)
                timers.after(timeout) { [weak self] in self?.waiters.timedOut(state: number) }
            }
        }
    }

    /// The state of every installed app, for `ps`.
    func status() -> [AppStatus] {
        queue.sync {
            let now = clock.now
            return apps.map { record in
                let run = record.run
                // CPU time since the last state change counts towards the current state.
                let cpu = run.map { run in run.cpu(upTo: run.machine.isAlive ? run.process.flatMap { ProcFS.cpuTime(pid: $0.pid) } : nil) }
                let footprint = run.flatMap { $0.machine.isAlive ? MemoryFootprint.of(processes(of: $0)) : nil }
                var status = AppStatus(
                    name: record.bundle.name, identifier: record.bundle.identifier,
                    pid: run?.process?.pid, state: currentState(of: record),
                    timeInState: run.map { $0.stateSince.duration(to: now) } ?? .zero,
                    openBackgroundTasks: run?.machine.openTasks.count ?? 0,
                    keptRunningBy: run.map { $0.machine.isLive ? $0.machine.holds.sorted() : [] } ?? [],
                    backgroundTimeRemaining: run?.machine.backgroundTimeRemaining(at: now),
                    cpuForeground: cpu?.foreground ?? .zero, cpuBackground: cpu?.background ?? .zero,
                    violations: run?.violationCount ?? 0,
                    memory: footprint ?? run?.memory ?? 0,
                    peakMemory: max(run?.peakMemory ?? 0, footprint ?? 0),
                    backgroundWakeups: record.backgroundWakeups,
                    snapshot: run?.snapshot,
                    storage: storage.usage(of: record.bundle))
                status.transfers = transferListing(of: record.bundle.identifier)
                return status
            }
        }
    }

    /// Terminates every running app as sequence 7 says and returns when all have ended; then
    /// removes the host's cgroup. No app launches after this.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                waiters.shutdown(continuation)
                for record in apps {
                    if let run = record.run, run.machine.isAlive { handle(record, run, .terminate(byUser: false)) }
                }
                resumeShutdownIfDone()
            }
        }
    }

    /// Kills every app process at once, without callbacks (a second Ctrl-C).
    func killAll() {
        queue.sync {
            for record in apps {
                if let run = record.run, run.machine.isAlive { handle(record, run, .abort) }
            }
        }
    }
}
