#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

// A launch's process is started off the loop (ProcessStart, on the spawn thread); the loop takes
// the result back here. Meanwhile the app's events wait (AppRun.isSpawning), and commands that
// end the app end it once its process is known.
extension Supervisor {
    /// The launch waited for the standby being made: it goes on, unless it was ended meanwhile
    /// (then no process was started, and the machine hears that none is left).
    func resumeSpawn(_ record: AppRecord, _ run: AppRun, reason: String) {
        guard run.machine.isLive else {
            spawnEnded(record, run)
            handle(record, run, .exited(ProcessExit(status: .signaled(SIGKILL, coreDumped: false))))
            return
        }
        spawn(record, run, reason: reason)
    }

    /// What a launch decided before its process was started, for when it has been.
    struct PendingLaunch {
        var container: URL
        var sandbox: WireSandbox
        var reason: String
        /// The app's process limit, its namespace's init counted.
        var processes: Int
    }

    /// The spawn thread has started the app process (or could not): it is watched and
    /// configured, or the launch fails. One the host ended meanwhile is killed.
    func started(_ started: ProcessStart.Started, of start: ProcessStart, _ launch: PendingLaunch, _ record: AppRecord, _ run: AppRun) {
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
            } else if let waiting {
                groups.freezer?.remove()
                launchpad.returnWaitingGroups(waiting.groups)
                if groups.pids != waiting.groups.pids { groups.pids?.remove() }
                if groups.memory !== waiting.groups.memory { groups.memory?.discard() }
            } else {
                groups.discard()
            }
            failToSpawn(record, run, "cannot start the app process: \(error)")
            return
        }
        let bundle = record.bundle
        let process = AppProcess(
            spawned, groups: started.groups, name: bundle.name, forwardOutput: configuration.forwardAppOutput, sparing: waiting?.template)
        run.process = process
        // The template moves on to the next launch's groups; once it has left these, the app's
        // process limit is its own again.
        let waitedIn = waiting?.groups.pids
        let processes = launch.processes
        launchpad.prepareWaitingGroups { [weak process] in
            guard let process, !process.isClosed, let pids = waitedIn, process.groupPaths.contains(pids.path) else { return }
            try? pids.write("pids.max", "\(processes)")
        }
        if let failure = spawned.templateFailure {
            publish(HostEvent(
                time: Date(), app: bundle.identifier, name: bundle.name, pid: process.pid, event: .warning,
                detail: "launched by exec: the launch template could not start it (\(failure))"), run: run)
        }
        warnIfWithoutMemoryGroup(process, record, run)
        watch(process, record, run)
        spawnEnded(record, run)
        guard run.machine.isLive else {
            // Ended (terminated, the host shutting down) while it was being started.
            process.closeChannel()
            process.killAll()
            return
        }
        guard !spawned.configured else { return }
        do {
            send(.configure(try configurationMessage(
                record, run, container: launch.container, sandbox: launch.sandbox, groupPaths: process.groupPaths,
                ownPID: process.pidInNamespace, reason: launch.reason)), record, run)
        } catch {
            handle(record, run, .launchFailed("cannot compile the app's seccomp filter: \(error)"))
        }
    }

    /// The launch's wait for its process is over: the events its machine said meanwhile are
    /// said now, in order, with the process's pid.
    func spawnEnded(_ record: AppRecord, _ run: AppRun) {
        guard run.isSpawning else { return }
        run.isSpawning = false
        for event in run.takeHeldEvents() { emit(event, record, run) }
    }
}
