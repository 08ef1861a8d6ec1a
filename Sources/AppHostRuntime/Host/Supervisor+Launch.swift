#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims

extension Supervisor {
    // MARK: Running an app

    func app(named name: String) throws -> AppRecord {
        try apps.record(named: name)
    }

    func currentState(of record: AppRecord) -> AppState {
        record.run?.machine.state ?? .notRunning
    }

    func sendForegroundAppAway(except keep: AppRecord?) {
        for record in apps.foreground.sorted().map({ apps[$0] }) where record !== keep {
            if let run = record.run, run.machine.isAlive, run.machine.isInForeground {
                handle(record, run, .moveToBackground)
            }
        }
    }

    /// Launches the app; with `event`, into the background for it.
    func start(_ record: AppRecord, kind: LaunchKind, reason: String, event: BackgroundEvent? = nil) {
        guard !waiters.isShuttingDown else { return }
        if kind == .background { record.backgroundWakeups += 1 }
        // A new process: no scene is connected yet (the sessions stay).
        if record.bundle.adoptsScenes { scenes.change(record.bundle.identifier) { $0.disconnectAll() } }
        let modes = Set(ContinuousMode.allCases.filter { record.bundle.backgroundModes.contains($0.backgroundMode) })
        let run = AppRun(
            machine: LifecycleMachine(policy: configuration.policy, continuousModes: modes, activatesOnLaunch: !record.bundle.adoptsScenes),
            id: RunID(app: record.id, launch: record.launches), now: clock.now)
        record.launches += 1
        record.run = run
        handle(record, run, event.map { .deliver($0, reason: reason) } ?? .launch(kind, reason: reason))
    }

    func spawn(_ record: AppRecord, _ run: AppRun, reason: String) {
        // A standby being made is this launch's: it waits for it off the loop, and takes it.
        if launchpad.isMakingStandby {
            run.isSpawning = true
            launchpad.afterSpawnThread { [weak self, weak record, weak run] in
                guard let self, let record, let run else { return }
                resumeSpawn(record, run, reason: reason)
            }
            return
        }
        let bundle = record.bundle
        // Past what the machine's limits allow, a clear refusal (HostCapacity), not a launch
        // that fails for want of a descriptor. The apps are counted only when enough are
        // installed to reach the bound: no walk over thousands on every launch below it.
        // (The app being launched is among them, not yet live.)
        let capacity = facts.capacity
        let live = apps.count <= capacity.apps ? 0 : apps.reduce(0) { $0 + ($1.run?.process?.isClosed == false ? 1 : 0) }
        if apps.count > capacity.apps && live >= capacity.apps {
            failToSpawn(record, run, capacity.refusal(launching: bundle.name, running: live))
            return
        }
        let policy = configuration.policy
        var sandbox = WireSandbox(entitlements: bundle.entitlements.sorted(), writablePaths: [])
        let container = Containers.url(for: bundle, in: configuration.stateDirectory)
        var owner: (uid: UInt32, gid: UInt32)?
        do {
            if let user = try storage.owner(of: bundle) {
                owner = (user.uid, user.uid)
                sandbox.uid = user.uid
                sandbox.gid = user.uid
                sandbox.groups = user.groups
            }
        } catch {
            failToSpawn(record, run, "cannot prepare the app's container: \(error)")
            return
        }
        // Storage limits first: the file systems (or quotas) the containers below live in.
        prepareStorage(for: bundle, run: run)
        let groupContainers = bundle.appGroups.map { Containers.groupURL($0, in: configuration.stateDirectory).path }
        sandbox.writablePaths = [container.path] + groupContainers
        sandbox.groupContainers = Dictionary(zip(bundle.appGroups, groupContainers)) { first, _ in first }
        // Made (or found, and repaired where the app tampered with them) before the app process
        // reaches them: a standby's only once its configuration is on its way (below).
        var containersMade = false
        func makeContainers() -> Bool {
            guard !containersMade else { return true }
            var repairs: [String] = []
            defer {
                for repair in repairs {
                    publish(HostEvent(
                        time: Date(), app: bundle.identifier, name: bundle.name, event: .warning,
                        detail: "its container was tampered with: \(repair)"), run: run)
                }
            }
            do {
                _ = try Containers.prepare(for: bundle, in: configuration.stateDirectory, owner: owner, repairs: &repairs)
                for (index, group) in bundle.appGroups.enumerated() {
                    _ = try Containers.prepareGroup(
                        group, in: configuration.stateDirectory, gid: policy.perAppUsers ? sandbox.groups?[index] : sandbox.gid,
                        repairs: &repairs)
                }
            } catch {
                failToSpawn(record, run, "cannot prepare the app's container: \(error)")
                return false
            }
            containersMade = true
            return true
        }
        if let standby = launchpad.takeStandby(container: container.path),
           launch(record, run, from: standby, container: container, sandbox: sandbox, reason: reason, makeContainers: makeContainers) {
            spawnEnded(record, run)
            return
        }
        guard makeContainers() else { return }
        let groupName = launchpad.groupName(bundle.name)
        let namespaces = environment.namespaces.flags
        let memoryLimit = run.machine.isInForeground ? policy.foregroundMemoryLimit : policy.backgroundMemoryLimit
        // The init of a PID namespace is born in the waiting groups with the app process, and
        // counts as one of its tasks there; a process the host moves is moved alone.
        let processes = policy.processLimit + (namespaces != 0 ? 1 : 0)
        let waiting = launchpad.takeWaitingGroups(processes: processes, memory: memoryLimit)
        let groups = AppProcess.Groups(
            freezer: try? environment.freezerGroup?.makeChild(named: groupName),
            pids: waiting?.groups.pids ?? environment.pidsGroup.flatMap { try? $0.makePidsGroup(named: groupName, limit: policy.processLimit) },
            memory: waiting?.groups.memory
                ?? environment.memoryGroup.flatMap { MemoryGroup.make(in: $0, named: groupName, limit: memoryLimit) })
        if groups.pids == nil && sandbox.uid != nil { sandbox.processLimit = UInt64(policy.processLimit) }
        // Removes the groups of a process that did not start (waiting groups still hold the
        // template: they wait for the next launch).
        func discardGroups() {
            groups.freezer?.remove()
            if let waiting {
                launchpad.returnWaitingGroups(waiting.groups)
                if groups.pids != waiting.groups.pids { groups.pids?.remove() }
                if groups.memory !== waiting.groups.memory { groups.memory?.discard() }
            } else {
                groups.discard()
            }
        }
        sandbox.namespaced = namespaces != 0
        // In namespaces the runner is the first child of apphost-init, which, while the runner
        // starts up, hides the state directory but for what the app may see.
        let appExecutable = configuration.appExecutable
        let executable = namespaces != 0 ? configuration.initExecutable : appExecutable
        let arguments = namespaces == 0 ? [appProcessArgument] : initOptions(bundle, sandbox, groupPaths: groups.paths, sharedRules: true)
        let runner = namespaces == 0 ? nil : [appExecutable, appProcessArgument]
        let processEnvironment = Containers.environment(container: container, parent: namespaces != 0 ? nil : getpid())
        let template = launchpad.runningTemplate
        // A fork of the template born in all its groups (README.md, "How apps are launched") finds
        // its configuration waiting on its control socket: it need not wait for the host to move
        // it, and the host's own work on the new process overlaps its start-up. Only where the
        // app's pid is known before the fork (its namespace's, for the seccomp filter).
        var configured: [UInt8]?
        if template != nil, namespaces != 0, groups.pids == waiting?.groups.pids, groups.memory === waiting?.groups.memory {
            do {
                configured = WireCoding.encode(HostMessage.configure(try configurationMessage(
                    record, run, container: container, sandbox: sandbox, groupPaths: groups.paths, ownPID: Namespaces.appPID, reason: reason)))
            } catch {
                discardGroups()
                failToSpawn(record, run, "cannot compile the app's seccomp filter: \(error)")
                return
            }
        }
        let start = ProcessStart(
            executable: executable, arguments: arguments, environment: processEnvironment, namespaces: namespaces, runner: runner,
            template: template, groups: groups, waiting: waiting, configurationAhead: configured)
        let launch = PendingLaunch(container: container, sandbox: sandbox, reason: reason, processes: processes)
        // Off the loop: the loop goes on with other apps meanwhile, and this app's events wait
        // for its process (`launching` says its pid).
        run.isSpawning = true
        let queue = queue
        spawner.async { [weak self, weak record, weak run] in
            let started = start.run()
            queue.async { [weak self, weak record, weak run] in
                guard let self, let record, let run else {
                    if case .success(let spawned) = started.result { spawned.abandon(groups: started.groups) }
                    return
                }
                self.started(started, of: start, launch, record, run)
            }
        }
    }

    /// What a namespace's init is told: the state directory hidden but for the app's containers
    /// (writable) and its bundle (readable); the app's Landlock rules, which it adds to the ruleset
    /// it passes to the app process (the system's too, unless a standby's init added them before).
    private func initOptions(_ bundle: AppBundle, _ sandbox: WireSandbox, groupPaths: [String], sharedRules: Bool) -> [String] {
        let rules = Landlock.appRules(
            processes: "/proc", readable: Self.libraryDirectories + groupPaths, bundle: bundle.url.path, plugin: bundle.pluginURL.path,
            writable: sandbox.writablePaths)
        return ["--hide", configuration.stateDirectory.path] + sandbox.writablePaths.flatMap { ["--writable", $0] } + ["--readable", bundle.url.path]
            + Landlock.initOptions((sharedRules ? Landlock.sharedRules : []) + rules)
    }

    /// Launches the app in the standby (Supervisor+Standby): its groups sized for the app, its
    /// configuration written, its containers made (`makeContainers`, which says why not itself),
    /// its init told what to show; no fork, no process start-up.
    /// Returns false, the standby ended, if it cannot take the app (a limit its groups refuse,
    /// an init or a socket that does not take what it is sent): the launch then starts a process
    /// as without one.
    private func launch(
        _ record: AppRecord, _ run: AppRun, from standby: Standby, container: URL, sandbox: WireSandbox, reason: String,
        makeContainers: () -> Bool
    ) -> Bool {
        let bundle = record.bundle
        let policy = configuration.policy
        var sandbox = sandbox
        let spawned = standby.spawned
        let namespaces = spawned.initChannel != nil
        // A standby just made may still share its groups with the template, whose move out is
        // queued on the spawn thread: one task more until it has left.
        let processes = policy.processLimit + (namespaces ? 1 : 0)
        let memoryLimit = run.machine.isInForeground ? policy.foregroundMemoryLimit : policy.backgroundMemoryLimit
        let pids = standby.waiting?.groups.pids
        sandbox.namespaced = namespaces
        // Without a pids group, the app's user is held to the limit by RLIMIT_NPROC instead.
        if pids == nil && sandbox.uid != nil { sandbox.processLimit = UInt64(policy.processLimit) }
        // Its groups are named launch-N, as the cgroup v1 groups of a template's fork are (a
        // cgroup v2 group cannot be renamed).
        let groups = AppProcess.Groups(freezer: standby.freezer, pids: pids, memory: standby.waiting?.groups.memory)
        let configuration: WireConfiguration
        do {
            configuration = try configurationMessage(
                record, run, container: container, sandbox: sandbox, groupPaths: groups.paths,
                ownPID: namespaces ? Namespaces.appPID : spawned.pid, reason: reason)
        } catch {
            discardAfterSpawnThread(standby)
            failToSpawn(record, run, "cannot compile the app's seccomp filter: \(error)")
            return true
        }
        let body = WireCoding.encode(HostMessage.configure(configuration))
        func deliver() -> Bool {
            body.count <= AppProcessSpawner.maximumConfigurationAhead
                && (try? ControlChannel(fd: spawned.control).send(body: body, nonBlocking: true)) != nil
        }
        // The standby's groups were sized for a foreground launch when it was made.
        func size() -> Bool {
            (pids.map { standby.processLimit == processes + 1 || (try? $0.write("pids.max", "\(processes + 1)")) != nil } ?? true)
                && (standby.waiting?.groups.memory.map { $0.limit == memoryLimit || $0.setLimit(memoryLimit) } ?? true)
        }
        // The app process is configured first, then its init is told the app's paths and rules,
        // then the containers are made, and the init told so: the app process confines all but
        // its files meanwhile, and its init makes its Landlock ruleset of all but the containers
        // (both wait for what needs the containers). Without an init, nothing would make the
        // app process wait: its containers are made first. Its groups are sized before all.
        guard namespaces || makeContainers() else {
            discardAfterSpawnThread(standby)
            return true
        }
        let options = initOptions(bundle, sandbox, groupPaths: groups.paths, sharedRules: false)
        let started = size() && deliver() && (spawned.initChannel.map { (try? Standby.sendInitOptions(options, on: $0)) != nil } ?? true)
        if started && !makeContainers() {
            // Configured, it is confining itself: it ends with its groups.
            discardAfterSpawnThread(standby)
            return true
        }
        guard started, spawned.initChannel.map({ (try? Standby.tellInitContainersMade(on: $0)) != nil }) ?? true else {
            // The template's queued move first: then nothing but the standby is in its groups.
            discardAfterSpawnThread(standby)
            return false
        }
        let process = AppProcess(
            spawned, groups: groups, name: bundle.name, forwardOutput: self.configuration.forwardAppOutput, sparing: standby.waiting?.template)
        run.process = process
        warnIfWithoutMemoryGroup(process, record, run)
        if let pids {
            spawner.async { [weak self, weak process] in
                self?.queue.async { [weak process] in
                    guard let process, !process.isClosed else { return }
                    try? pids.write("pids.max", "\(processes)")
                }
            }
        }
        watch(process, record, run)
        return true
    }

    /// Ends a standby that did not take its launch once the template's queued move out of its
    /// groups is done (then nothing but the standby is in them), without waiting for it.
    private func discardAfterSpawnThread(_ standby: Standby) {
        launchpad.afterSpawnThread { [timers] in standby.discard(retryingWith: timers) }
    }

    /// Says so when the app process is in no memory cgroup where the host has one.
    func warnIfWithoutMemoryGroup(_ process: AppProcess, _ record: AppRecord, _ run: AppRun) {
        guard environment.memoryGroup != nil && process.memoryGroup == nil else { return }
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: process.pid, event: .warning,
            detail: "no memory cgroup for this process: its memory limits are enforced by sampling"), run: run)
    }

    /// Watches a started app process: its control socket, its end, its memory group and its
    /// diagnostics, each handled on the queue.
    func watch(_ process: AppProcess, _ record: AppRecord, _ run: AppRun) {
        process.start(on: queue, timers: timers, reader: controlReader, control: { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            readControl(record, run)
        }, exit: { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            reap(record, run)
        }, memory: { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            memoryGroupFull(record, run)
        }, diagnostics: { [weak self, weak record, weak run] in
            guard let self, let record, let run else { return }
            readDiagnostics(record, run)
        })
    }

    /// What the app process is told before it runs: who it is, where its container is, and how
    /// it confines itself (`sandbox`, with the seccomp filter for `ownPID` and read access to its
    /// own cgroups, `groupPaths`, not the other apps').
    func configurationMessage(
        _ record: AppRecord, _ run: AppRun, container: URL, sandbox: WireSandbox, groupPaths: [String], ownPID: pid_t, reason: String
    ) throws -> WireConfiguration {
        let bundle = record.bundle
        let policy = configuration.policy
        var sandbox = sandbox
        // Compiled once per entitlements and own pid (about a millisecond, which a forked app
        // process would otherwise wait for); only a namespace's pid, always the same, is kept.
        let entitlements = Set(bundle.entitlements.compactMap(SyscallProfile.Entitlement.init(rawValue:)))
        let program = try launchpad.filter(entitlements: entitlements, ownPID: ownPID)
        sandbox.filter = Data(program.instructions)
        sandbox.filterNotifies = program.notifies
        sandbox.readablePaths = Self.libraryDirectories + groupPaths
        var message = WireConfiguration(
            bundleIdentifier: bundle.identifier, bundleName: bundle.name, bundlePath: bundle.url.path,
            pluginPath: bundle.pluginURL.path, delegateClassName: bundle.delegateClassName,
            containerPath: container.path, launchReason: reason, capabilities: bundle.capabilities,
            openFileLimit: UInt64(policy.openFileLimit), sandbox: sandbox)
        message.launchPayload = run.machine.pendingEvents.first { $0.kind == .remoteNotification }?.payload
        message.backgroundTasks = backgroundTasksConfiguration(for: bundle)
        message.locationAuthorization = location.authorization(of: bundle.identifier)?.wireName
        message.logLevel = configuration.appLogLevel.rawValue
        message.scenes = bundle.sceneManifest
        if bundle.adoptsScenes {
            message.sceneSessions = scenes[bundle.identifier].forLaunch
            scenes.change(bundle.identifier) { $0.launched() }
        }
        message.transfers = transferDesk.atLaunch(of: bundle.identifier)
        // The app runs them without the host's sending them (README.md, "How apps are launched").
        message.launchCallbacks = run.launchCallbacks
        return message
    }

    func failToSpawn(_ record: AppRecord, _ run: AppRun, _ reason: String) {
        spawnEnded(record, run)
        handle(record, run, .launchFailed(reason))
        handle(record, run, .exited(ProcessExit(status: .exited(127))))
    }
}
