#if canImport(Glibc)
import Glibc
#endif
import AppHostProtocol
import AppHostSystem

// What comes back from the spawn thread, where the launchpad does what would hold the loop (a
// fork, a template's start or end, a move between groups): each comes back to the loop as an
// input of its own (`HostInput.launchpad`), in the order the thread did them.
extension Launchpad {
    /// What the spawn thread did, handed back to the loop.
    enum Return: Sendable {
        /// The template started, or could not; `again`: after it ended, not at the host's start.
        case templateStarted(Result<TemplateLauncher.Running, SystemError>, again: Bool)
        /// The template ended, and is reaped: `how` says how it ended.
        case templateReaped(pid: pid_t, how: String)
        /// The standby was made, or could not be: what came of it waits in `madeStandby`.
        case standbyMade
        /// A launch's process was started, or could not be.
        case processStarted(StartedLaunch)
        /// The template left the groups `process` was born in, with a limit of `processes` tasks
        /// in `pids` meanwhile (the template counted there): the limit is the app's own again.
        case templateLeft(AppProcess, pids: Cgroup, processes: Int)
        /// The spawn thread is done with what was queued before the host's shutdown, and the
        /// template is stopped.
        case stopped
    }

    /// What the loop goes on with, once the launchpad has taken back what the spawn thread did.
    enum Outcome {
        /// The launch of this run has a process, or failed.
        case launched(RunID, LaunchResult)
        /// The launchpad is shut down: the host's shutdown goes on.
        case stopped
    }

    /// A launch whose process the spawn thread started (or could not): what the launchpad
    /// needs to finish it on the loop.
    struct StartedLaunch: Sendable {
        let started: ProcessStart.Started
        let start: ProcessStart
        let order: LaunchOrder
        let sandbox: WireSandbox
        let processes: Int
        /// What the launch found to warn about before the start (a container repaired).
        let warnings: [String]
    }
}
