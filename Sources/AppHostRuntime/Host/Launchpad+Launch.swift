#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims

/// What a launch asks of the launchpad, prepared by the loop from what the other subsystems
/// know (the app's user from StorageService, its scenes, transfers and tasks for its message).
struct LaunchOrder: Sendable {
    /// The run the launch is for: what came of it comes back for it.
    var run: RunID
    var bundle: AppBundle
    /// The app's container (made, or repaired, before its process reaches it).
    var container: URL
    /// The app's own user and its groups (a root host's), if it has one.
    var user: (uid: UInt32, groups: [UInt32])?
    /// The memory limit of the state it launches into.
    var memoryLimit: UInt64
    /// The configure message but its sandbox, which the launch completes for the process it
    /// starts (its filter is compiled for the pid the app sees as its own).
    var message: WireConfiguration
}

/// What came of a launch, for the loop: the app process, or why there is none; and what to warn
/// about, either way (a container the app tampered with, a launch exec'd after all).
struct LaunchResult: Sendable {
    enum Outcome {
        /// The process runs, and is configured as `configure` says.
        case started(AppProcess, configure: Configure)
        case failed(String)
    }

    /// How a started process gets its configure message.
    enum Configure {
        /// It was sent ahead (the standby's, a fork's born in its groups).
        case sent
        /// The loop sends it.
        case send(WireConfiguration)
        /// There is none to send: the launch fails, and the process ends.
        case cannot(String)
    }

    var outcome: Outcome
    var warnings: [String] = []

    /// Ends the process of a result no run takes (its run or its host is gone): nothing may
    /// keep it.
    func abandon() {
        guard case .started(let process, _) = outcome else { return }
        process.closeChannel()
        process.killAll()
    }
}

/// The launch itself (docs/launching.md, "How apps are launched"): the app's sandbox composed, its
/// containers made, then the standby taken, or a process started on the spawn thread in groups
/// made (or waiting) for it. The loop hears the result at once when the launch took the standby
/// or failed before a start, later when a process was started off the loop (`Outcome.launched`).
extension Launchpad {
    /// Launches `order`'s app: what came of it, or nil if its process is being started off the
    /// loop (the result comes back for `order.run`).
    func launch(_ order: LaunchOrder) -> LaunchResult? {
        let bundle = order.bundle
        let policy = configuration.policy
        let stateDirectory = configuration.stateDirectory
        var sandbox = WireSandbox(entitlements: bundle.entitlements.sorted(), writablePaths: [])
        if let user = order.user {
            sandbox.uid = user.uid
            sandbox.gid = user.uid
            sandbox.groups = user.groups
        }
        let groupContainers = bundle.appGroups.map { Containers.groupURL($0, in: stateDirectory).path }
        sandbox.writablePaths = [order.container.path] + groupContainers
        sandbox.groupContainers = Dictionary(zip(bundle.appGroups, groupContainers)) { first, _ in first }
        // Made (or found, and repaired where the app tampered with them) before the app process
        // reaches them: a standby's only once its configuration is on its way.
        var warnings: [String] = []
        var containersMade = false
        func makeContainers() -> String? {
            guard !containersMade else { return nil }
            var repairs: [String] = []
            defer { warnings += repairs.map { "its container was tampered with: \($0)" } }
            do {
                let owner = order.user.map { (uid: $0.uid, gid: $0.uid) }
                _ = try Containers.prepare(for: bundle, in: stateDirectory, owner: owner, repairs: &repairs)
                for (index, group) in bundle.appGroups.enumerated() {
                    _ = try Containers.prepareGroup(
                        group, in: stateDirectory, gid: policy.perAppUsers ? sandbox.groups?[index] : sandbox.gid, repairs: &repairs)
                }
            } catch {
                return "cannot prepare the app's container: \(error)"
            }
            containersMade = true
            return nil
        }
        func fail(_ reason: String) -> LaunchResult { LaunchResult(outcome: .failed(reason), warnings: warnings) }

        if let standby = takeStandby(container: order.container.path),
           var result = launch(order, from: standby, sandbox: sandbox, makeContainers: makeContainers) {
            result.warnings = warnings + result.warnings
            return result
        }
        if let failure = makeContainers() { return fail(failure) }
        let groupName = groupName(bundle.name)
        let namespaces = environment.namespaces.flags
        // The init of a PID namespace is born in the waiting groups with the app process, and
        // counts as one of its tasks there; a process the host moves is moved alone.
        let processes = policy.processLimit + (namespaces != 0 ? 1 : 0)
        let waiting = takeWaitingGroups(processes: processes, memory: order.memoryLimit)
        let groups = AppProcess.Groups(
            freezer: try? environment.freezerGroup?.makeChild(named: groupName),
            pids: waiting?.groups.pids ?? environment.pidsGroup.flatMap { try? $0.makePidsGroup(named: groupName, limit: policy.processLimit) },
            memory: waiting?.groups.memory
                ?? environment.memoryGroup.flatMap { MemoryGroup.make(in: $0, named: groupName, limit: order.memoryLimit) })
        if groups.pids == nil && sandbox.uid != nil { sandbox.processLimit = UInt64(policy.processLimit) }
        sandbox.namespaced = namespaces != 0
        // In namespaces the runner is the first child of apphost-init, which, while the runner
        // starts up, hides the state directory but for what the app may see.
        let appExecutable = configuration.appExecutable
        let executable = namespaces != 0 ? configuration.initExecutable : appExecutable
        let arguments = namespaces == 0 ? [appProcessArgument] : initOptions(bundle, sandbox, groupPaths: groups.paths, sharedRules: true)
        let runner = namespaces == 0 ? nil : [appExecutable, appProcessArgument]
        let processEnvironment = Containers.environment(container: order.container, parent: namespaces != 0 ? nil : getpid())
        let template = runningTemplate
        // A fork of the template born in all its groups finds its configuration waiting on its
        // control socket: it need not wait for the host to move it, and the host's own work on
        // the new process overlaps its start-up. Only where the app's pid is known before the
        // fork (its namespace's, for the seccomp filter).
        var configured: [UInt8]?
        if template != nil, namespaces != 0, groups.pids == waiting?.groups.pids, groups.memory === waiting?.groups.memory {
            do {
                configured = WireCoding.encode(HostMessage.configure(
                    try message(order, sandbox: sandbox, groupPaths: groups.paths, ownPID: Namespaces.appPID)))
            } catch {
                release(groups, waiting: waiting)
                return fail("cannot compile the app's seccomp filter: \(error)")
            }
        }
        let start = ProcessStart(
            executable: executable, arguments: arguments, environment: processEnvironment, namespaces: namespaces, runner: runner,
            template: template, groups: groups, waiting: waiting, configurationAhead: configured)
        // Off the loop: the loop goes on with other apps meanwhile.
        let made = warnings
        let composed = sandbox
        context.spawner.async { [weak self] in
            let started = start.run()
            guard let self else {
                if case .success(let spawned) = started.result { spawned.abandon(groups: started.groups) }
                return
            }
            back(.processStarted(StartedLaunch(
                started: started, start: start, order: order, sandbox: composed, processes: processes, warnings: made)))
        }
        return nil
    }

    /// The spawn thread has started the app process (or could not).
    func started(_ launch: StartedLaunch) -> LaunchResult {
        var result = started(launch.started, of: launch.start, launch.order, sandbox: launch.sandbox, processes: launch.processes)
        result.warnings = launch.warnings + result.warnings
        return result
    }

    private func started(
        _ started: ProcessStart.Started, of start: ProcessStart, _ order: LaunchOrder, sandbox: WireSandbox, processes: Int
    ) -> LaunchResult {
        let waiting = start.waiting
        let spawned: SpawnedProcess
        switch started.result {
        case .success(let value): spawned = value
        case .failure(let error):
            let groups = start.groups
            if started.wroteAhead {
                // A fork the template started without answering has its configuration and would
                // run unwatched: whatever is in its groups is killed with them (the template
                // spared), and they are not used again.
                groups.freezer?.remove()
                groups.pids?.remove(sparing: waiting?.template)
                groups.memory?.discard(sparing: waiting?.template)
            } else {
                release(groups, waiting: waiting)
            }
            return LaunchResult(outcome: .failed("cannot start the app process: \(error)"))
        }
        let process = AppProcess(
            spawned, groups: started.groups, name: order.bundle.name, forwardOutput: configuration.forwardAppOutput, sparing: waiting?.template)
        // The template moves on to the next launch's groups; once it has left these, the app's
        // process limit is its own again.
        prepareWaitingGroups(then: waiting?.groups.pids.map { .templateLeft(process, pids: $0, processes: processes) })
        var warnings = spawned.templateFailure.map { ["launched by exec: the launch template could not start it (\($0))"] } ?? []
        warnings += memoryGroupWarning(process)
        guard !spawned.configured else { return LaunchResult(outcome: .started(process, configure: .sent), warnings: warnings) }
        do {
            let message = try message(order, sandbox: sandbox, groupPaths: process.groupPaths, ownPID: process.pidInNamespace)
            return LaunchResult(outcome: .started(process, configure: .send(message)), warnings: warnings)
        } catch {
            return LaunchResult(outcome: .started(process, configure: .cannot("cannot compile the app's seccomp filter: \(error)")), warnings: warnings)
        }
    }

    /// Launches the app in the standby: its groups sized for the app, its configuration written,
    /// its containers made (`makeContainers`, which says why not), its init told what to show;
    /// no fork, no process start-up. Nil, the standby ended, if it cannot take the app (a limit
    /// its groups refuse, an init or a socket that does not take what it is sent): the launch
    /// then starts a process as without one.
    private func launch(
        _ order: LaunchOrder, from standby: Standby, sandbox: WireSandbox, makeContainers: () -> String?
    ) -> LaunchResult? {
        let policy = configuration.policy
        var sandbox = sandbox
        let spawned = standby.spawned
        let namespaces = spawned.initChannel != nil
        // A standby just made may still share its groups with the template, whose move out is
        // queued on the spawn thread: one task more until it has left.
        let processes = policy.processLimit + (namespaces ? 1 : 0)
        let pids = standby.waiting?.groups.pids
        sandbox.namespaced = namespaces
        // Without a pids group, the app's user is held to the limit by RLIMIT_NPROC instead.
        if pids == nil && sandbox.uid != nil { sandbox.processLimit = UInt64(policy.processLimit) }
        // Its groups are named launch-N, as the cgroup v1 groups of a template's fork are (a
        // cgroup v2 group cannot be renamed).
        let groups = AppProcess.Groups(freezer: standby.freezer, pids: pids, memory: standby.waiting?.groups.memory)
        let body: [UInt8]
        do {
            body = WireCoding.encode(HostMessage.configure(try message(
                order, sandbox: sandbox, groupPaths: groups.paths, ownPID: namespaces ? Namespaces.appPID : spawned.pid)))
        } catch {
            discardAfterSpawnThread(standby)
            return LaunchResult(outcome: .failed("cannot compile the app's seccomp filter: \(error)"))
        }
        func deliver() -> Bool {
            body.count <= AppProcessSpawner.maximumConfigurationAhead
                && (try? ControlChannel(fd: spawned.control).send(body: body, nonBlocking: true)) != nil
        }
        // The standby's groups were sized for a foreground launch when it was made.
        func size() -> Bool {
            (pids.map { standby.processLimit == processes + 1 || (try? $0.write("pids.max", "\(processes + 1)")) != nil } ?? true)
                && (standby.waiting?.groups.memory.map { $0.limit == order.memoryLimit || $0.setLimit(order.memoryLimit) } ?? true)
        }
        // The app process is configured first, then its init is told the app's paths and rules,
        // then the containers are made, and the init told so: the app process confines all but
        // its files meanwhile, and its init makes its Landlock ruleset of all but the containers
        // (both wait for what needs the containers). Without an init, nothing would make the
        // app process wait: its containers are made first. Its groups are sized before all.
        if !namespaces, let failure = makeContainers() {
            discardAfterSpawnThread(standby)
            return LaunchResult(outcome: .failed(failure))
        }
        let options = initOptions(order.bundle, sandbox, groupPaths: groups.paths, sharedRules: false)
        let started = size() && deliver() && (spawned.initChannel.map { (try? Standby.sendInitOptions(options, on: $0)) != nil } ?? true)
        if started, let failure = makeContainers() {
            // Configured, it is confining itself: it ends with its groups.
            discardAfterSpawnThread(standby)
            return LaunchResult(outcome: .failed(failure))
        }
        guard started, spawned.initChannel.map({ (try? Standby.tellInitContainersMade(on: $0)) != nil }) ?? true else {
            // The template's queued move first: then nothing but the standby is in its groups.
            discardAfterSpawnThread(standby)
            return nil
        }
        let process = AppProcess(
            spawned, groups: groups, name: order.bundle.name, forwardOutput: configuration.forwardAppOutput, sparing: standby.waiting?.template)
        if let pids {
            context.spawner.async { [weak self, weak process] in
                guard let process else { return }
                self?.back(.templateLeft(process, pids: pids, processes: processes))
            }
        }
        return LaunchResult(outcome: .started(process, configure: .sent), warnings: memoryGroupWarning(process))
    }

    /// The configure message for a process whose groups are at `groupPaths` and whose own pid
    /// (as it sees it) is `ownPID`: the order's, with its sandbox and the seccomp filter for it.
    private func message(_ order: LaunchOrder, sandbox: WireSandbox, groupPaths: [String], ownPID: pid_t) throws -> WireConfiguration {
        var sandbox = sandbox
        // Compiled once per entitlements and own pid (about a millisecond, which a forked app
        // process would otherwise wait for); only a namespace's pid, always the same, is kept.
        let entitlements = Set(order.bundle.entitlements.compactMap(SyscallProfile.Entitlement.init(rawValue:)))
        let program = try filters.program(entitlements: entitlements, ownPID: ownPID)
        sandbox.filter = Data(program.instructions)
        sandbox.filterNotifies = program.notifies
        sandbox.readablePaths = Self.libraryDirectories + groupPaths
        var message = order.message
        message.sandbox = sandbox
        return message
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

    /// Removes the groups made for a process that did not start; waiting groups it took (which
    /// still hold the template) wait for the next launch again.
    private func release(_ groups: AppProcess.Groups, waiting: (groups: WaitingGroups, template: pid_t)?) {
        guard let waiting else { return groups.discard() }
        groups.freezer?.remove()
        returnWaitingGroups(waiting.groups)
        if groups.pids != waiting.groups.pids { groups.pids?.remove() }
        if groups.memory !== waiting.groups.memory { groups.memory?.discard() }
    }

    /// Ends a standby that did not take its launch once the template's queued move out of its
    /// groups is done (then nothing but the standby is in them), without waiting for it.
    private func discardAfterSpawnThread(_ standby: Standby) {
        afterSpawnThread { [timers = context.timers] in standby.discard(retryingWith: timers) }
    }

    /// Says so when the app process is in no memory cgroup where the host has one.
    private func memoryGroupWarning(_ process: AppProcess) -> [String] {
        guard environment.memoryGroup != nil && process.memoryGroup == nil else { return [] }
        return ["no memory cgroup for this process: its memory limits are enforced by sampling"]
    }

    /// Where the apps' libraries live: the host runs the same binary, so its own.
    static let libraryDirectories = Landlock.libraryDirectories()
}
