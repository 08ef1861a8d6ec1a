#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import Synchronization
import Logging
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims

/// What is made ahead of each launch (docs/launching.md, "How apps are launched" and "How the code is
/// laid out"): the launch template process (started with the host, started again when it ends,
/// as TemplateSupervision allows), the next launch's cgroup v1 groups the template waits in, the
/// standby app process it forks ahead, and the compiled seccomp filters. Touched only on the
/// host's loop (hence unchecked): what the spawn thread did comes back to the loop as a `Return`,
/// an input of the loop's (`HostInput.launchpad`), which the loop hands to `receive`; a standby
/// made waits in `madeStandby`, a mutex, for it.
final class Launchpad: @unchecked Sendable {
    let context: Context
    let template: TemplateLauncher?
    private var templateSource: (any DispatchSourceRead)?
    private var supervision = TemplateSupervision()
    private var waitingGroups: WaitingGroups?
    private(set) var standby: Standby?
    /// Where the spawn thread leaves the standby it made, for the loop to collect.
    private let madeStandby = Mutex<Result<Standby, StandbyFailure>?>(nil)
    /// Set by `shutDown` and `tearDown`: nothing is made after it.
    private var isOver = false
    /// Where what the spawn thread did goes, on the loop (`onReturn`); false: nobody takes it.
    private var route: ((Return) -> Bool)?
    /// The seccomp filters compiled for launches.
    let filters = SeccompFilterCache()

    /// A launchpad for the host's launcher: the template where the configuration asks for it
    /// and the kernel has clone3 (else launches are exec'd).
    init(_ context: Context) {
        let configuration = context.configuration
        self.context = context
        template = configuration.launcher == .template && apphost_clone3_available() != 0
            ? TemplateLauncher(
                executable: configuration.appExecutable,
                environment: Containers.runtimeEnvironment + ["APPHOST_PARENT_PID=\(getpid())"] + launchTemplatePlaceholderEnvironment)
            : nil
        isStartingTemplate = template != nil
    }

    /// The launcher in use: the one configured, or exec where the template cannot be.
    var launcher: Launcher {
        configuration.launcher == .standby ? .standby : template != nil ? .template : .exec
    }

    var configuration: Supervisor.Configuration { context.configuration }
    var environment: HostEnvironment { context.environment }

    /// The template, if it runs: a launch forks it.
    var runningTemplate: TemplateLauncher? { template?.current != nil ? template : nil }

    // MARK: The template

    /// Whether the template is to be or being started at the host's start, on the spawn thread:
    /// a launch that comes meanwhile waits for it without holding the loop (`afterSpawnThread`).
    private(set) var isStartingTemplate: Bool

    /// Starts the template at the host's start; nothing waits for it. Once it runs, a
    /// `launcher` event names it (its pid); if it cannot start, a warning says why and apps
    /// launch by exec.
    private func startTemplateAtHostStart() {
        startTemplate(again: false)
    }

    /// Starts the template on the spawn thread; the loop does not wait meanwhile (apps launch by
    /// exec), and hears how (`Return.templateStarted`).
    private func startTemplate(again: Bool) {
        guard let template else { return }
        context.spawner.async { [weak self] in
            let started = Result { () throws(SystemError) in try template.start() }
            guard let self else {
                if case .success = started { template.stop() }
                return
            }
            back(.templateStarted(started, again: again))
        }
    }

    /// The template started (or could not): it is watched, and what launches need of it made;
    /// a `launcher` event or a warning says so. One that starts after the host is over is
    /// stopped.
    private func templateStarted(_ started: Result<TemplateLauncher.Running, SystemError>, again: Bool) {
        if !again { isStartingTemplate = false }
        guard !isOver else {
            if case .success = started { template?.stop() }
            return
        }
        switch (started, again) {
        case (.success(let running), _):
            watchTemplate(running)
            say(again ? "template: started again (pid \(running.pid))" : note)
        case (.failure(let error), false):
            context.publish(HostEvent(time: Date(), event: .warning, detail: "the launch template cannot start (\(error)): apps launch by exec"))
        case (.failure(let error), true):
            say("exec: the launch template cannot start again: \(error)")
        }
    }

    /// The template runs: it is watched for its end, and what launches need of it made.
    private func watchTemplate(_ running: TemplateLauncher.Running) {
        let source = DispatchSource.makeReadSource(fileDescriptor: running.pidfd, queue: context.queue)
        source.setEventHandler { [weak self] in self?.templateEnded() }
        // Closed only once no longer watched: a number reused while watched confuses the watch.
        source.setCancelHandler { closeIgnoringErrors(running.pidfd) }
        templateSource?.cancel()
        templateSource = source
        source.activate()
        discardWaitingGroups()
        prepareWaitingGroups()
        supervision.templateStarted()
        prepareStandby()
    }

    /// The template ended: it is reaped on the spawn thread, once that is done with it (a
    /// standby it was making fails), and `templateReaped` goes on.
    private func templateEnded() {
        templateSource?.cancel()
        templateSource = nil
        guard !isOver, let template else { return }
        let pid = template.current?.pid ?? 0
        let pidfd = template.current.map { dup($0.pidfd) } ?? -1
        context.spawner.async { [weak self] in
            let how = template.reap(through: pidfd)
            if pidfd >= 0 { closeIgnoringErrors(pidfd) }
            self?.back(.templateReaped(pid: pid, how: how))
        }
    }

    /// Says how the template ended, and starts it again unless it keeps ending.
    private func templateReaped(pid: pid_t, _ how: String) {
        collectStandby()
        discardStandby()
        guard !isOver, !context.isShuttingDown() else { return }
        let (restart, ends) = supervision.templateEnded(at: context.clock.now)
        let ended = "exec: the launch template (pid \(pid)) \(how)"
        guard restart else {
            say(ended + "; it ended \(ends) times in \(TemplateSupervision.restartWindow.formatted): apps launch by exec until the host restarts")
            return
        }
        say(ended + "; apps launch by exec until it is back")
        startTemplate(again: true)
    }

    private func say(_ detail: String) { context.publish(HostEvent(time: Date(), event: .launcher, detail: detail)) }

    /// The host is ending: nothing more is made; the template goes first, on the spawn thread
    /// once that is done with it (a standby being made; the template waits in groups of its own,
    /// or still in its standby's), then on the loop they go, and the standby; then the loop
    /// hears that it is over (`Outcome.stopped`).
    func shutDown() {
        isOver = true
        let template = template
        context.spawner.async { [weak self] in
            template?.stop()
            self?.back(.stopped)
        }
    }

    /// The host is gone (released without a shutdown, or after one): as `shutDown`, at once, and
    /// for good — the source stops watching the template, and a standby that comes back from
    /// the spawn thread later is ended rather than kept. Idempotent.
    func tearDown() {
        isOver = true
        template?.stop()
        standby?.discard(retryingWith: nil)
        standby = nil
        templateSource?.cancel()
        templateSource = nil
        discardWaitingGroups()
    }

    deinit { tearDown() }

    // MARK: Born in its groups

    /// Makes the next launch's groups and queues the template's move into them; `then` comes
    /// back to the loop once the template has left the groups it was in (at once if there is
    /// none). The move waits out an RCU grace period in about one launch in three (8–25 ms
    /// here): on the spawn thread, after the launch before, so that no launch waits for it.
    func prepareWaitingGroups(then: Return? = nil) {
        guard !isOver, let template, template.current != nil, environment.pidsGroup != nil || environment.memoryGroup != nil else {
            if let then { _ = receive(then) }
            return
        }
        let name = groupName("launch")
        let groups = WaitingGroups(
            pids: environment.pidsGroup.flatMap { try? $0.makePidsGroup(named: name, limit: configuration.policy.processLimit + 2) },
            memory: environment.memoryGroup.flatMap { MemoryGroup.make(in: $0, named: name, limit: .max) })
        waitingGroups = groups
        let members = [groups.pids, groups.memory?.group].compactMap { $0 }
        let fallback = [environment.pidsGroup, environment.memoryGroup].compactMap { $0 }
        context.spawner.async { [weak self] in
            _ = template.enter(members, fallback: fallback)
            if let then { self?.back(then) }
        }
    }

    /// The waiting groups for a launch, sized for it: at most `processes` tasks of the app's (the
    /// template counts until it has left), `memory` bytes; nil if there are none; with the
    /// template's pid, which the app's process must never kill with its groups. The template's
    /// move into them may still be queued on the spawn thread: the launch's start, queued after
    /// it, checks that it is there (`holdsTemplate`) before its fork counts on being born there.
    func takeWaitingGroups(processes: Int, memory: UInt64) -> (groups: WaitingGroups, template: pid_t)? {
        guard var groups = waitingGroups, let pid = template?.current?.pid,
              groups.pids != nil || groups.memory != nil else { return nil }
        waitingGroups = nil
        if let pids = groups.pids, (try? pids.write("pids.max", "\(processes + 1)")) == nil {
            pids.remove(sparing: pid)
            groups.pids = nil
        }
        if let group = groups.memory, !group.setLimit(memory) {
            group.discard(sparing: pid)
            groups.memory = nil
        }
        return (groups, pid)
    }

    /// Whether the template (`pid`) is in every one of the waiting groups: its move into them
    /// (queued on the spawn thread) succeeded. On the spawn thread, after that move.
    static func holdsTemplate(_ groups: WaitingGroups, pid: pid_t) -> Bool {
        let members = [groups.pids, groups.memory?.group].compactMap { $0 }
        return !members.isEmpty && members.allSatisfy { $0.processes.contains(pid) }
    }

    /// Gives back waiting groups a launch took and did not use (its spawn failed).
    func returnWaitingGroups(_ groups: WaitingGroups) {
        guard waitingGroups == nil else {
            groups.pids?.remove(sparing: template?.current?.pid)
            groups.memory?.discard(sparing: template?.current?.pid)
            return
        }
        waitingGroups = groups
    }

    private func discardWaitingGroups() {
        let pid = template?.current?.pid
        waitingGroups?.pids?.remove(sparing: pid)
        waitingGroups?.memory?.discard(sparing: pid)
        waitingGroups = nil
    }

    // MARK: The standby

    /// Makes the next launch's standby once a launch has settled (its making then does not
    /// compete with the launch for the processor), unless there is one, one is being made, or
    /// there is no template.
    func launchSettled() {
        if standby == nil, !isMakingStandby, template != nil || configuration.launcher == .standby { prepareStandby() }
    }

    /// What is made ahead from the host's start: the template (whose first standby is made once
    /// it has started), or the first standby under the standby launcher.
    func start() {
        startTemplateAtHostStart()
        if configuration.launcher == .standby { prepareStandby() }
    }

    /// Whether the spawn thread is making what a launch now would take (the standby, the
    /// template at the host's start): the launch waits for it first (`afterSpawnThread`).
    var isPreparing: Bool { isMakingStandby || isStartingTemplate }

    /// Whether the spawn thread is making the standby: a launch that comes meanwhile waits for
    /// it without holding the loop (`afterSpawnThread`), and takes it.
    private(set) var isMakingStandby = false

    /// Runs `work` on the spawn thread once it has done what is queued there now; `work` posts
    /// to the loop, where it comes after what that queued (a standby being made is collected
    /// first: it queued its collection before).
    func afterSpawnThread(_ work: @escaping @Sendable () -> Void) {
        context.spawner.async(work)
    }

    /// The standby, for a launch whose container is at `container`, if there is one that can
    /// take it (its container's variables fit the template's placeholders). None while one is
    /// being made: the launch waits for it first (`isMakingStandby`).
    func takeStandby(container: String) -> Standby? {
        guard !isMakingStandby, let made = standby else { return nil }
        guard containerEnvironment(container).allSatisfy({ $0.utf8.count <= Int(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) }) else { return nil }
        standby = nil
        // One whose namespace misses a container mounted since (this launch's, mounted for it)
        // would show the app the directory beneath.
        guard made.isUsable, made.mountChanges.map({ $0 == context.mountChanges() }) ?? true else {
            made.discard(retryingWith: context.timers)
            return nil
        }
        return made
    }

    /// Makes the standby, on the spawn thread (Standby.make); the loop collects it.
    private func prepareStandby() {
        guard !isOver, standby == nil, !isMakingStandby, !context.isShuttingDown(), supervision.makesStandbys else { return }
        let recipe: Standby.Recipe
        if configuration.launcher == .standby {
            // Exec'd, in groups of its own, which it is moved into on the spawn thread. Not in a
            // user namespace (a host that is not root): an exec'd process there has no
            // capability left to join the mount namespace its init prepares; launches are exec'd.
            guard !execsWithoutStandbys else { return }
            let name = groupName("launch")
            let processes = configuration.policy.processLimit + (environment.namespaces.flags != 0 ? 1 : 0)
            let groups = WaitingGroups(
                pids: environment.pidsGroup.flatMap { try? $0.makePidsGroup(named: name, limit: processes + 1) },
                memory: environment.memoryGroup.flatMap { MemoryGroup.make(in: $0, named: name, limit: configuration.policy.foregroundMemoryLimit) })
            recipe = Standby.Recipe(
                configuration: configuration, namespaces: environment.namespaces.flags, template: nil, templatePID: 0,
                taken: groups, freezer: try? environment.freezerGroup?.makeChild(named: name), mountChanges: context.mountChanges())
        } else {
            guard let template, let templatePID = template.current?.pid else { return }
            // Born in its cgroup v1 groups or not made: a move into one waits out an RCU grace period.
            let taken = waitingGroups
            if taken == nil, environment.pidsGroup != nil || environment.memoryGroup != nil { return }
            waitingGroups = nil
            recipe = Standby.Recipe(
                configuration: configuration, namespaces: environment.namespaces.flags, template: template, templatePID: templatePID,
                taken: taken, freezer: try? environment.freezerGroup?.makeChild(named: groupName("launch")), mountChanges: context.mountChanges())
        }
        isMakingStandby = true
        context.spawner.async { [weak self] in
            let made = recipe.make()
            guard let self else {
                switch made {
                case .success(let standby): standby.discard(retryingWith: nil)
                case .failure(let failure): failure.discard()
                }
                return
            }
            madeStandby.withLock { $0 = made }
            back(.standbyMade)
        }
    }

    /// Takes the standby the spawn thread made, if it has made one since it was asked. A launch
    /// that comes while it is being made waits for it on the spawn thread and collects it.
    private func collectStandby() {
        guard let made = madeStandby.withLock({ value in defer { value = nil }; return value }) else { return }
        standbyMade(made)
    }

    /// Keeps the standby the template made, if it is whole, and the template moves on to the
    /// next launch's groups. If it made none, or one the freezer cannot reach (it would have to
    /// be moved: no better than a launch), the template is still in the groups taken for it:
    /// they wait for the next launch again. Past `TemplateSupervision.standbyFailureLimit` such
    /// ends in a row, no more are made until the template starts again (a kernel without
    /// CLONE_INTO_CGROUP, say).
    private func standbyMade(_ made: Result<Standby, StandbyFailure>) {
        isMakingStandby = false
        if isOver {
            switch made {
            case .success(let made): made.discard(retryingWith: nil)
            case .failure(let failure): failure.discard()
            }
            return
        }
        switch made {
        case .success(let made) where made.freezer == nil || made.spawned.startedInGroup:
            supervision.standbyMade(true)
            standby = made
            // At shutdown the template stays where it is: it is stopped, then the standby goes.
            if !context.isShuttingDown() { prepareWaitingGroups() }
        case .success(let made):
            supervision.standbyMade(false)
            made.end()
            made.freezer?.remove()
            if let groups = made.waiting?.groups { returnWaitingGroups(groups) }
        case .failure(let failure):
            // The launch that comes finds none and asks the template itself, which says why.
            configuration.logger.debug("no standby app process: \(failure.error)")
            supervision.standbyMade(false)
            failure.freezer?.remove()
            guard let groups = failure.waiting else { return }
            if failure.holdsTemplate {
                returnWaitingGroups(groups)
            } else {
                groups.pids?.remove(sparing: template?.current?.pid)
                groups.memory?.discard(sparing: template?.current?.pid)
                prepareWaitingGroups()
            }
        }
    }

    /// Ends the standby (the template that made it has ended: apps launch by exec until it is
    /// back; or the host is ending). One still being made is ended when it comes back, if the
    /// template has ended (it fails) or the host is over. The template may still be in the
    /// standby's cgroup v1 groups.
    private func discardStandby() {
        standby?.discard(retryingWith: context.timers)
        standby = nil
    }

    // MARK: Back from the spawn thread

    /// Where what the spawn thread did goes: `route` takes it on the loop (as an input of the
    /// loop's, which hands it to `receive`), or returns false if nobody will (the host is gone).
    func onReturn(_ route: @escaping (Return) -> Bool) {
        self.route = route
    }

    /// On the spawn thread: hands `value` back to the loop, behind what the thread handed back
    /// before it. What nobody takes is undone.
    func back(_ value: Return) {
        context.queue.async { [self] in
            guard let route, route(value) else { return abandon(value) }
        }
    }

    /// Takes back on the loop what the spawn thread did; says what the loop must go on with.
    func receive(_ value: Return) -> Outcome? {
        switch value {
        case .templateStarted(let started, let again):
            templateStarted(started, again: again)
        case .templateReaped(let pid, let how):
            templateReaped(pid: pid, how)
        case .standbyMade:
            collectStandby()
        case .processStarted(let launch):
            return .launched(launch.order.run, started(launch))
        case .templateLeft(let process, let pids, let processes):
            // The template moved on: the app's process limit is its own again.
            guard !process.isClosed, process.groupPaths.contains(pids.path) else { return nil }
            try? pids.write("pids.max", "\(processes)")
        case .stopped:
            collectStandby()
            discardStandby()
            discardWaitingGroups()
            return .stopped
        }
        return nil
    }

    /// Undoes what the spawn thread did for a host that is gone.
    private func abandon(_ value: Return) {
        switch value {
        case .templateStarted(.success, _): template?.stop()
        case .standbyMade:
            isOver = true
            collectStandby()
        case .processStarted(let launch):
            if case .success(let spawned) = launch.started.result { spawned.abandon(groups: launch.started.groups) }
        case .templateStarted, .templateReaped, .templateLeft, .stopped: break
        }
    }
}
