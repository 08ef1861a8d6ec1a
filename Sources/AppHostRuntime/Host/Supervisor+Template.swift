#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// The launch template's supervision (README.md, "How apps are launched"): started with the
/// host, started again when it ends, and in the meantime apps launch by exec.
extension Supervisor {
    /// Starts the template, on the spawn thread, and watches for its end. Returns its pid, or
    /// why it could not start.
    func startTemplate() -> Result<pid_t, SystemError> {
        guard let template else { return .failure(SystemError("no launch template", errno: ENOENT)) }
        let started = spawner.run { () -> Result<TemplateLauncher.Running, SystemError> in
            Result { () throws(SystemError) in try template.start() }
        }
        guard case .success(let running) = started else {
            return started.map(\.pid)
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: running.pidfd, queue: queue)
        source.setEventHandler { [weak self] in self?.templateEnded() }
        // Closed only once no longer watched: a number reused while watched confuses the watch.
        source.setCancelHandler { closeIgnoringErrors(running.pidfd) }
        templateSource?.cancel()
        templateSource = source
        source.activate()
        discardWaitingGroups()
        prepareWaitingGroups()
        templateSupervision.templateStarted()
        prepareStandby()
        return .success(running.pid)
    }

    /// The template ended: says so, and starts it again unless it keeps ending.
    func templateEnded() {
        templateSource?.cancel()
        templateSource = nil
        guard let template else { return }
        let pid = template.current?.pid ?? 0
        let how = spawner.run { template.reap() }
        discardStandby()
        guard !waiters.isShuttingDown else { return }
        let (restart, ends) = templateSupervision.templateEnded(at: clock.now)
        var detail = "exec: the launch template (pid \(pid)) \(how)"
        if !restart {
            detail += "; it ended \(ends) times in \(TemplateSupervision.restartWindow.formatted): apps launch by exec until the host restarts"
            publish(HostEvent(time: Date(), event: .launcher, detail: detail), run: nil)
            return
        }
        publish(HostEvent(time: Date(), event: .launcher, detail: detail + "; apps launch by exec until it is back"), run: nil)
        switch startTemplate() {
        case .success(let pid):
            publish(HostEvent(time: Date(), event: .launcher, detail: "template: started again (pid \(pid))"), run: nil)
        case .failure(let error):
            publish(HostEvent(time: Date(), event: .launcher, detail: "exec: the launch template cannot start again: \(error)"), run: nil)
        }
    }

    // MARK: Born in its groups

    /// The next launch's cgroup v1 groups (pids, memory), which the template is moved into
    /// ahead of it: its fork is born in them (as in the freezer group, by CLONE_INTO_CGROUP),
    /// and no launch waits for a move into a v1 group, which waits out an RCU grace period in
    /// about one launch in three (8–25 ms here). The move waits instead, on the spawn thread,
    /// after the launch before.
    struct WaitingGroups {
        var pids: Cgroup?
        var memory: MemoryGroup?
    }

    /// Makes the next launch's groups and queues the template's move into them; `then` runs on
    /// the queue once the template has left the groups it was in (at once if there is none).
    func prepareWaitingGroups(then: (@Sendable () -> Void)? = nil) {
        guard let template, template.current != nil, environment.pidsGroup != nil || environment.memoryGroup != nil else {
            then?()
            return
        }
        groupCounter += 1
        let name = "launch-\(groupCounter)"
        let groups = WaitingGroups(
            pids: environment.pidsGroup.flatMap { try? $0.makePidsGroup(named: name, limit: configuration.policy.processLimit + 2) },
            memory: environment.memoryGroup.flatMap { MemoryGroup.make(in: $0, named: name, limit: .max) })
        waitingGroups = groups
        let members = [groups.pids, groups.memory?.group].compactMap { $0 }
        let fallback = [environment.pidsGroup, environment.memoryGroup].compactMap { $0 }
        spawner.async { [weak self] in
            _ = template.enter(members, fallback: fallback)
            guard let then else { return }
            self?.queue.async(execute: then)
        }
    }

    /// The waiting groups for a launch, sized for it: at most `processes` tasks of the app's (the
    /// template counts until it has left), `memory` bytes; nil if there are none, or the
    /// template is not in them (its move failed), and with the template's pid, which the app's
    /// process must never kill with its groups.
    func takeWaitingGroups(processes: Int, memory: UInt64) -> (groups: WaitingGroups, template: pid_t)? {
        guard var groups = waitingGroups, let pid = template?.current?.pid else { return nil }
        // The move was queued before this launch's request on the spawn thread: wait for it.
        spawner.run {}
        let members = [groups.pids, groups.memory?.group].compactMap { $0 }
        guard !members.isEmpty, members.allSatisfy({ $0.processes.contains(pid) }) else {
            discardWaitingGroups()
            return nil
        }
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

    /// Gives back waiting groups a launch took and did not use (its spawn failed).
    func returnWaitingGroups(_ groups: WaitingGroups) {
        guard waitingGroups == nil else {
            groups.pids?.remove(sparing: template?.current?.pid)
            groups.memory?.discard(sparing: template?.current?.pid)
            return
        }
        waitingGroups = groups
    }

    /// Removes the waiting groups (the host is shutting down, or the template is gone).
    func discardWaitingGroups() {
        let pid = template?.current?.pid
        waitingGroups?.pids?.remove(sparing: pid)
        waitingGroups?.memory?.discard(sparing: pid)
        waitingGroups = nil
    }

    /// Which launcher apps launch with now, for `ps`-like answers and the `started` event.
    var launcherNote: String {
        guard let running = template?.current else {
            if configuration.launcher == .exec { return "exec" }
            return apphost_clone3_available() != 0 ? "exec (the launch template is not running)" : "exec (this kernel has no clone3)"
        }
        let binary = configuration.appExecutable == configuration.executable ? "; app processes run apphost itself: apphost-app is not beside it" : ""
        let sdk = URL(fileURLWithPath: configuration.appExecutable).deletingLastPathComponent().appendingPathComponent(launchTemplateSDKFileName)
        let loaded = FileManager.default.fileExists(atPath: sdk.path) ? "; \(launchTemplateSDKFileName) beside it" : ""
        return "template (pid \(running.pid)\(loaded); each launch's app process made ahead)\(binary)"
    }
}
