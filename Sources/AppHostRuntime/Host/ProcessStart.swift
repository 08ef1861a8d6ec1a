#if canImport(Glibc)
import Glibc
#endif
import AppHostSystem
import CAppHostShims

/// One app process to start, as the loop prepared it, run on the spawn thread (`run`): the loop
/// never waits for a fork, an exec, the template's answer or a move between cgroups (one waits
/// out an RCU grace period, milliseconds). The loop hands it over with `SpawnThread.async` and
/// takes the result back as an input of its own (Launchpad.launch, Supervisor.launched).
///
/// What it holds is the launch's alone until it comes back (the groups were made or taken for
/// it), hence `@unchecked Sendable`.
struct ProcessStart: @unchecked Sendable {
    var executable: String
    var arguments: [String]
    var environment: [String]
    /// Namespaces.Support flags: nonzero, the process is the init of a PID namespace.
    var namespaces: Int32
    /// In namespaces: the runner and its arguments, the init's first child.
    var runner: [String]?
    var template: TemplateLauncher?
    /// The groups the app process is to be in.
    var groups: AppProcess.Groups
    /// The waiting groups it took, and the template's pid, which must be in them for its fork
    /// to be born there (the template's move into them was queued on the spawn thread before).
    var waiting: (groups: WaitingGroups, template: pid_t)?
    /// The configure message, written on its control socket before it starts, for a fork born
    /// in every one of its groups.
    var configurationAhead: [UInt8]?

    /// What came of it.
    struct Started: @unchecked Sendable {
        var result: Result<SpawnedProcess, SystemError>
        /// The groups the process is in (a group it could not join is dropped and removed).
        var groups: AppProcess.Groups
        /// Whether the configuration was meant to be written ahead (its groups are then spent
        /// with whatever the template started in them, if the start failed).
        var wroteAhead: Bool
    }

    /// Starts the process and puts it in its groups. On the spawn thread.
    func run() -> Started {
        // The template's move into the waiting groups ran before this, in the thread's order: a
        // fork is born in them only if the template is there now, and is given its configuration
        // ahead only then (else the host moves it first, and configures it after).
        let bornInGroups = waiting.map { Launchpad.holdsTemplate($0.groups, pid: $0.template) } ?? true
        let ahead = bornInGroups ? configurationAhead : nil
        let result = Result { () throws(SystemError) in
            try AppProcessSpawner.spawn(
                executable: executable, arguments: arguments, environment: environment, namespaces: namespaces, app: runner,
                template: template, group: groups.freezer, configuration: ahead)
        }
        let joined = (try? result.get()).map { AppProcess.join(groups, spawned: $0, sparing: waiting?.template) } ?? groups
        return Started(result: result, groups: joined, wroteAhead: ahead != nil)
    }
}

extension SpawnedProcess {
    /// Ends a process whose host is gone before it took it: killed (the whole freezer group,
    /// where it has one, and its started process), every descriptor closed. Its groups are left
    /// to the sweep of the instance's cgroups.
    func abandon(groups: AppProcess.Groups) {
        _ = groups.freezer?.killAll()
        _ = apphost_pidfd_send_signal(pidfd, SIGKILL)
        for fd in [pidfd, control, output, diagnostics] + (initChannel.map { [$0] } ?? []) { closeIgnoringErrors(fd) }
    }
}
