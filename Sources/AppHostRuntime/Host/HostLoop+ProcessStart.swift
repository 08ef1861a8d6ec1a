#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem

// A launch's process is started off the loop (ProcessStart, on the spawn thread); the loop takes
// the result back here. Meanwhile the app's events wait (AppRun.isSpawning), and commands that
// end the app end it once its process is known.
extension HostLoop {
    /// The launch waited for the standby being made: it goes on, unless it was ended meanwhile
    /// (then no process was started, and the machine hears that none is left).
    func resumeSpawn(_ record: AppRecord, _ run: AppRun, reason: String, callbacks: [WireCallbackRequest]) {
        guard run.machine.isLive else {
            spawnEnded(record, run)
            handle(record, run, .exited(ProcessExit(status: .signaled(SIGKILL, coreDumped: false))))
            return
        }
        spawn(record, run, reason: reason, callbacks: callbacks)
    }

    /// The launchpad started the app process (or could not): it is watched and configured, or
    /// the launch fails. One the host ended meanwhile is killed.
    func launched(_ result: LaunchResult, _ record: AppRecord, _ run: AppRun) {
        let process: AppProcess
        let configure: LaunchResult.Configure
        switch result.outcome {
        case .started(let started, let how):
            process = started
            configure = how
            run.process = process
        case .failed(let reason):
            publishWarnings(result.warnings, record, run)
            return failToSpawn(record, run, reason)
        }
        publishWarnings(result.warnings, record, run)
        watch(process, record, run)
        spawnEnded(record, run)
        guard run.machine.isLive else {
            // Ended (terminated, the host shutting down) while it was being started.
            process.closeChannel()
            process.killAll()
            return
        }
        switch configure {
        case .sent: break
        case .send(let message): send(.configure(message), record, run)
        case .cannot(let reason): handle(record, run, .launchFailed(reason))
        }
    }

    private func publishWarnings(_ warnings: [String], _ record: AppRecord, _ run: AppRun) {
        for warning in warnings {
            publish(HostEvent(
                time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid, event: .warning,
                detail: warning), run: run)
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
