#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims
import Logging

/// An app process made ahead of its launch (docs/launching.md, "How apps are launched"), as Android's
/// zygote keeps unspecialized app processes ready: the launch template's fork, already in its
/// groups (and, in namespaces, under its init, which has exec'd apphost-init), waiting for a
/// configuration. No app is chosen yet: it has no container, and its init has made and isolated
/// the mount namespace but for the app's paths, which it waits to be told (the app process has
/// joined that namespace). A launch that finds
/// one skips the request to the template, its fork, the process's start-up and the namespace;
/// the next is made once that launch has ended its callbacks (settled), so that making it does
/// not compete with the launch for the processor.
struct Standby {
    /// The init's option that makes it wait for its options on its channel to the host.
    static let initArgument = "--standby"

    var spawned: SpawnedProcess
    /// The freezer group it was born in (a neutral name, as the waiting groups have).
    var freezer: Cgroup?
    /// The cgroup v1 groups it was born in, and the template that was in them with it.
    var waiting: (groups: WaitingGroups, template: pid_t)?
    /// The `pids.max` its pids group was given when it was made.
    var processLimit: Int?
    /// In namespaces, the host's count of container mounts when it was made: its init makes
    /// its mount namespace then (a copy of the host's mounts), which misses any made since.
    var mountChanges: Int?

    /// Whether the process is still there and its control socket still open: a standby can
    /// be killed while it waits (by the OOM killer, by hand), and is then not used.
    var isUsable: Bool {
        var status = apphost_child_status()
        guard apphost_waitid_pidfd(spawned.pidfd, WEXITED | WNOHANG | WNOWAIT, &status) == 0, status.code == 0 else { return false }
        // Its end closed (hung up) once the process has gone, whatever it had written first.
        var socket = pollfd(fd: spawned.control, events: 0, revents: 0)
        return poll(&socket, 1, 0) == 0
    }

    /// Kills it (in namespaces, its init, whose end ends the app process), reaps it and closes
    /// what the host held of it; its groups stay.
    func end() {
        _ = apphost_pidfd_send_signal(spawned.pidfd, SIGKILL)
        var status = apphost_child_status()
        _ = apphost_waitid_pidfd(spawned.pidfd, WEXITED, &status)
        for fd in [spawned.pidfd, spawned.control, spawned.output, spawned.diagnostics] + (spawned.initChannel.map { [$0] } ?? []) {
            closeIgnoringErrors(fd)
        }
    }

    /// Ends it and removes its groups (the template has left them). Its processes may take a
    /// moment to leave their groups once reaped: a group the kernel still holds is removed again
    /// by `timers` (on the host's loop; nil off it, when the host is gone).
    func discard(retryingWith timers: HostTimers?) {
        end()
        let template = waiting?.template
        waiting?.groups.memory?.discard(sparing: template)
        for group in [freezer, waiting?.groups.pids, waiting?.groups.memory?.group].compactMap({ $0 }) where !group.remove(sparing: template) {
            if let timers { group.remove(retryingWith: timers, sparing: template) }
        }
    }
}

/// A standby the template did not make, and the groups made for it.
struct StandbyFailure: Error {
    var error: SystemError
    var freezer: Cgroup?
    var waiting: WaitingGroups?
    /// Whether the template is in the waiting groups (else they are of no use to a launch).
    var holdsTemplate: Bool

    /// Removes the groups (the template has been stopped, or was never in them).
    func discard() {
        freezer?.remove()
        waiting?.pids?.remove()
        waiting?.memory?.discard()
    }
}

extension Standby {
    /// What a standby is made of, gathered on the loop; `make` runs on the spawn thread.
    struct Recipe: @unchecked Sendable {
        let configuration: Supervisor.Configuration
        let namespaces: Int32
        /// The template that forks it; nil: it is exec'd (the standby launcher), and moved into
        /// `taken`, made for it alone, here on the spawn thread, ahead of its launch.
        let template: TemplateLauncher?
        let templatePID: pid_t
        /// The waiting groups it is to be born in (taken from the next launch), or, exec'd, to
        /// be moved into.
        let taken: WaitingGroups?
        let freezer: Cgroup?
        let mountChanges: Int

        /// Forks the standby from the template, in its groups (sized as a launch's). The
        /// template's move into the waiting groups was queued on the spawn thread before: it is
        /// done. Without a template, execs it and moves it into them.
        func make() -> Result<Standby, StandbyFailure> {
            guard template != nil else { return exec() }
            let processes = configuration.policy.processLimit + (namespaces != 0 ? 1 : 0)
            var waiting: (groups: WaitingGroups, template: pid_t)?
            if let taken {
                let members = [taken.pids, taken.memory?.group].compactMap { $0 }
                guard !members.isEmpty, members.allSatisfy({ $0.processes.contains(templatePID) }),
                      taken.pids.map({ (try? $0.write("pids.max", "\(processes + 1)")) != nil }) ?? true,
                      taken.memory?.setLimit(configuration.policy.foregroundMemoryLimit) ?? true
                else {
                    return .failure(StandbyFailure(
                        error: SystemError("the launch template is not in its waiting groups", errno: ESRCH), freezer: freezer,
                        waiting: taken, holdsTemplate: false))
                }
                waiting = (taken, templatePID)
            }
            let result = Result { () throws(SystemError) in try spawn(extraEnvironment: []) }
            let processLimit = waiting?.groups.pids == nil ? nil : processes + 1
            return result
                .map { [waiting] in
                    Standby(
                        spawned: $0, freezer: freezer, waiting: waiting, processLimit: processLimit,
                        mountChanges: namespaces != 0 ? mountChanges : nil)
                }
                .mapError { [waiting] error in StandbyFailure(error: error, freezer: freezer, waiting: waiting?.groups, holdsTemplate: true) }
        }

        /// Starts the standby's process: forked from the template, or exec'd without one.
        private func spawn(extraEnvironment: [String]) throws(SystemError) -> SpawnedProcess {
            let appExecutable = configuration.appExecutable
            // Its init hides the state directory, as every launch's does, and adds the Landlock
            // rules every app shares to the app's ruleset, before the launch.
            let arguments = namespaces != 0
                ? [Standby.initArgument, "--hide", configuration.stateDirectory.path] + Landlock.initOptions(Landlock.sharedRules)
                : [appProcessArgument]
            // No container yet: the runner sets its variables once its configuration names it.
            let environment = Containers.runtimeEnvironment
                + (namespaces != 0 ? ["\(standbyNamespaceVariable)=1"] : ["APPHOST_PARENT_PID=\(getpid())"])
                + ["\(standbyCapabilitiesVariable)=\(configuration.policy.allowedCapabilities.joined(separator: ","))"] + extraEnvironment
            return try AppProcessSpawner.spawn(
                executable: namespaces != 0 ? configuration.initExecutable : appExecutable, arguments: arguments,
                environment: environment, namespaces: namespaces != 0 ? namespaces | APPHOST_NAMESPACE_MOUNT_LATER : 0,
                app: namespaces != 0 ? [appExecutable, appProcessArgument] : nil, template: template, group: freezer,
                execIfRefused: false)
        }

        /// Execs the standby (its own address-space layout and seeds: nothing of it is another
        /// app's) and moves it into its groups, which were made for it: no template is in them.
        /// The move may wait out an RCU grace period, here, ahead of any launch.
        private func exec() -> Result<Standby, StandbyFailure> {
            let processes = configuration.policy.processLimit + (namespaces != 0 ? 1 : 0)
            var spawned: SpawnedProcess
            do {
                // With the template's placeholders: what reads a variable before its container is
                // known (CoreFoundation keeps where HOME is) reads it once it is written in place.
                spawned = try spawn(extraEnvironment: ["\(standbyExecedVariable)=1"] + launchTemplatePlaceholderEnvironment)
            } catch {
                return .failure(StandbyFailure(error: error, freezer: freezer, waiting: taken, holdsTemplate: false))
            }
            let joined = AppProcess.join(
                AppProcess.Groups(freezer: freezer, pids: taken?.pids, memory: taken?.memory), spawned: spawned, sparing: nil)
            spawned.startedInGroup = freezer == nil || joined.freezer != nil
            let groups = WaitingGroups(pids: joined.pids, memory: joined.memory)
            // No template shares its groups: 0 spares nothing.
            return .success(Standby(
                spawned: spawned, freezer: freezer, waiting: (groups, 0), processLimit: groups.pids == nil ? nil : processes + 1,
                mountChanges: namespaces != 0 ? mountChanges : nil))
        }
    }

    /// Tells a standby's init what to hide and what to show: its options, as apphost-init reads
    /// them (a 4-byte length, then each option and a NUL byte).
    static func sendInitOptions(_ options: [String], on channel: Int32) throws(SystemError) {
        let body = Array(options.map { $0 + "\0" }.joined().utf8)
        var length = UInt32(body.count)
        let bytes = withUnsafeBytes(of: &length) { Array($0) } + body
        let written = bytes.withUnsafeBytes { write(channel, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw SystemError("write to the app's init", errno: written < 0 ? errno : EAGAIN) }
    }

    /// Tells a standby's init that the app's containers are made: it may mount them now.
    static func tellInitContainersMade(on channel: Int32) throws(SystemError) {
        guard write(channel, "C", 1) == 1 else { throw SystemError("write to the app's init", errno: errno) }
    }
}
