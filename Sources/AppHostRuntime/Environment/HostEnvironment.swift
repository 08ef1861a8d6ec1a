#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import AppHostSandbox
import AppHostSystem

/// What this machine gives one host instance, probed and set up once at start: the cgroups it
/// made (a v2 group to freeze apps in, v1 pids and memory groups to limit them), how it
/// suspends, confines and limits apps, and a line on each, where it is not the best, saying why.
/// `apphost doctor` sets up a throwaway one and shows the same lines.
final class HostEnvironment {
    /// This instance's groups: nil where the machine does not give the hierarchy.
    let freezerGroup: Cgroup?
    let pidsGroup: Cgroup?
    let memoryGroup: Cgroup?
    let suspender: any Suspender
    let suspensionMechanism: SuspensionMechanism
    let memoryEnforcement: MemoryEnforcement
    /// Whether apps get a PID and a mount namespace of their own.
    let namespaces: Namespaces.Support
    /// One line each: how apps are suspended and how their memory is held.
    let suspensionNote: String
    let memoryNote: String

    /// Sets up the instance's groups and probes for the apps' namespaces, whose init is
    /// `namespacesInit` (nil: no namespaces). Throws when the configuration insists on something
    /// the machine does not give (`--suspension cgroup`, `--memory-enforcement cgroup`).
    init(
        instance: String, suspension: SuspensionMechanism?, memory: MemoryEnforcement?, namespacesInit initExecutable: String?,
        queue: DispatchQueue, timers: HostTimers
    ) throws(SupervisorError) {
        if let initExecutable {
            namespaces = access(initExecutable, X_OK) == 0
                ? Namespaces.probe() : .unavailable("\(initExecutable) is missing (build the apphost-init product beside apphost)")
        } else {
            namespaces = .unavailable("namespaces off (requested)")
        }
        var note: String
        var freezer: (any Suspender)?
        var freezerGroup: Cgroup?
        switch suspension {
        case .sigstop:
            note = "SIGSTOP (requested)"
        case .cgroupFreezer, nil:
            do throws(CgroupUnavailable) {
                let group = try Cgroup.instance(instance, in: .unified)
                guard group.canWrite("cgroup.freeze") else {
                    group.remove()
                    throw CgroupUnavailable(reason: "\(group.path) has no writable cgroup.freeze (kernel older than 5.2?)")
                }
                freezerGroup = group
                freezer = CgroupFreezer(queue: queue, timers: timers)
                note = "cgroup v2 freezer (\(group.path))"
                if freezer == nil { note = "SIGSTOP, degraded: inotify is unavailable, so a freeze cannot be verified" }
            } catch {
                if suspension == .cgroupFreezer {
                    throw SupervisorError("the cgroup v2 freezer was requested but is unavailable: \(error.reason)", code: .unavailable)
                }
                note = "SIGSTOP, degraded: \(error.reason)"
            }
        }
        pidsGroup = try? Cgroup.instance(instance, in: .controller("pids"))
        memoryGroup = memory == .sampling ? nil : try? Cgroup.instance(instance, in: .controller("memory"))
        if memory == .cgroup && memoryGroup == nil {
            pidsGroup?.remove()
            freezerGroup?.remove()
            throw SupervisorError(
                "the memory cgroup was requested but the cgroup v1 memory controller is not mounted or not writable here", code: .unavailable)
        }
        self.freezerGroup = freezer == nil ? nil : freezerGroup
        if freezer == nil { freezerGroup?.remove() }
        suspender = freezer ?? SignalStopper(timers: timers)
        suspensionMechanism = freezer != nil ? .cgroupFreezer : .sigstop
        suspensionNote = note
        memoryEnforcement = memoryGroup != nil ? .cgroup : .sampling
        memoryNote = memoryGroup != nil
            ? "limits by the memory cgroup"
            : "limits by sampling\(memory == .sampling ? " (requested)" : ", degraded: no writable cgroup v1 memory controller")"
    }

    /// How apps are confined here: seccomp, Landlock, namespaces, users, the process limit.
    /// `users` is the app users' range on a root host, nil on a host that is not root.
    func sandboxNote(users range: String?, perAppUsers: Bool, processLimit: Int) -> String {
        var parts = [Seccomp.notificationAvailable ? "seccomp (violations reported)" : "seccomp, degraded: no user notification, so refusals are not reported"]
        let landlock = Landlock.abiVersion
        parts.append(landlock > 0 ? "Landlock ABI \(landlock)" : "no Landlock, degraded: file access is limited only by permissions")
        parts.append(Self.namespacesNote(namespaces))
        parts.append(range.map { perAppUsers ? "per-app users \($0)" : "one shared app user from \($0) (per-app users off)" }
            ?? "apps run as uid \(geteuid()), the host's")
        parts.append(pidsGroup != nil
            ? "pids cgroup (\(processLimit) tasks)"
            : range != nil ? "RLIMIT_NPROC (\(processLimit) tasks\(perAppUsers ? "" : ", shared by every app"))" : "no process limit, degraded: no pids cgroup and no app user")
        return parts.joined(separator: ", ")
    }

    /// What the app's own namespaces guarantee, or what is lost without them.
    static func namespacesNote(_ namespaces: Namespaces.Support) -> String {
        switch namespaces {
        case .available:
            return "own PID and mount namespaces (no process outlives the host; read-only outside the app's containers)"
        case .unavailable(let reason):
            return "no PID or mount namespace, degraded (\(reason)): a process an app spawns can outlive a host killed with "
                + "SIGKILL until the next host starts, and an app can change the metadata (chmod, chown, utimensat, setxattr) "
                + "of what its user owns outside its containers"
        }
    }

    /// Removes the instance's groups (apps are gone by then).
    func remove() {
        freezerGroup?.removeWaiting()
        pidsGroup?.removeWaiting()
        memoryGroup?.removeWaiting()
    }
}

extension Cgroup {
    /// A pids group for one app process, holding at most `limit` tasks (threads and processes).
    func makePidsGroup(named name: String, limit: Int) throws(SystemError) -> Cgroup {
        let group = try makeChild(named: name)
        do {
            try group.write("pids.max", "\(limit)")
        } catch {
            group.remove()
            throw error
        }
        return group
    }
}
