#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSystem
import AppHostSandbox
import CAppHostShims

/// What this kernel and user give apphost, and what apphost will use (`apphost doctor`).
public struct DoctorReport: Sendable {
    public struct Finding: Sendable {
        public var name: String
        public var available: Bool
        public var detail: String
    }

    public var findings: [Finding] = []
    /// How containers would be held to their storage limits (`probeStorage`).
    public var storageMechanism: StorageMechanism?
    var storageNote: String?

    /// Probes the machine. Creates and removes a throwaway cgroup to prove the freezer works.
    /// `initExecutable`: apphost-init, by default beside the running binary.
    public static func probe(instance: String = "doctor", initExecutable: String? = nil) -> DoctorReport {
        var report = DoctorReport()
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func statusField(_ key: String) -> String? {
            status.split(separator: "\n").first { $0.hasPrefix(key + ":") }
                .map { $0.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces) }
        }

        let actions = (try? String(contentsOfFile: "/proc/sys/kernel/seccomp/actions_avail", encoding: .utf8)) ?? ""
        report.add("seccomp filter", statusField("Seccomp") != nil && actions.contains("errno"),
                   actions.isEmpty ? "no /proc/sys/kernel/seccomp/actions_avail" : "actions: \(actions.trimmingCharacters(in: .whitespacesAndNewlines))")
        report.add("seccomp user notification", actions.contains("user_notif"), actions.contains("user_notif") ? "SECCOMP_RET_USER_NOTIF" : "missing: violations cannot be reported")

        report.add("libseccomp user notification", Seccomp.notificationAvailable,
                   Seccomp.notificationAvailable ? "API level 5 or later" : "missing: refusals are enforced but not reported, and dangerous calls are killed by the kernel")

        let landlock = apphost_landlock_abi_version()
        report.add("Landlock", landlock > 0, landlock > 0
            ? "ABI version \(landlock)\(landlock >= 6 ? " (with signal and abstract-socket scoping)" : "")"
            : "unavailable (\(errnoText(errno))): apps are limited only by file permissions")

        let pidfd = apphost_pidfd_open(getpid())
        report.add("pidfd", pidfd >= 0, pidfd >= 0 ? "pidfd_open works" : "pidfd_open failed: \(errnoText(errno)); apphost needs Linux 5.3")
        if pidfd >= 0 { close(pidfd) }

        // The host's own set-up, made and removed: what doctor says is what a host would use.
        let queue = DispatchQueue(label: "apphost.doctor")
        let besideMe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let environment = try? HostEnvironment(
            instance: instance, suspension: nil, memory: nil,
            namespacesInit: initExecutable ?? besideMe.appendingPathComponent("apphost-init").path, queue: queue,
            timers: HostTimers(queue: queue, clock: MonotonicClock()))
        let v2 = Cgroup.hostDirectory(in: .unified)
        if let environment, let group = environment.freezerGroup {
            report.add("cgroup v2 freezer", true, "\(group.path) (cgroup.freeze)")
        } else {
            report.add("cgroup v2 freezer", false, v2.map { "\($0): \(environment?.suspensionNote ?? "unavailable")" } ?? "no cgroup v2 hierarchy is mounted")
        }
        let v1Freezer = FileManager.default.fileExists(atPath: "/sys/fs/cgroup/freezer/freezer.state")
            || FileManager.default.fileExists(atPath: "/sys/fs/cgroup/freezer/cgroup.procs")
        report.add("cgroup v1 freezer", v1Freezer, v1Freezer ? "/sys/fs/cgroup/freezer (not used: v1-frozen tasks ignore SIGKILL until thawed)" : "not mounted")
        for (controller, group, use) in [
            ("memory", environment?.memoryGroup, "per-app memory limits, OOM events"), ("pids", environment?.pidsGroup, "per-app process limit"),
        ] {
            let directory = Cgroup.hostDirectory(in: .controller(controller))
            report.add("cgroup v1 \(controller) controller", group != nil,
                       group != nil ? "\(directory ?? "") (\(use))" : directory.map { "\($0) is not writable" } ?? "not mounted")
        }
        let namespaces = environment?.namespaces ?? .unavailable("the host's environment cannot be set up")
        switch namespaces {
        case .available(let flags):
            report.add("PID and mount namespaces", true, flags & Int32(APPHOST_NAMESPACE_USER) != 0
                ? "in an unprivileged user namespace (the host is not root)" : "made by the root host")
        case .unavailable(let reason):
            report.add("PID and mount namespaces", false, reason)
        }
        environment?.remove()
        report.add("per-app users", getuid() == 0, getuid() == 0
            ? "the host is root: each app runs under its own uid from the policy's range (one shared uid with --no-app-users)"
            : "the host is not root: apps run as uid \(getuid())")

        report.add("clone3", apphost_clone3_available() != 0, apphost_clone3_available() != 0
            ? "the launch template forks app processes with it (CLONE_PARENT, CLONE_INTO_CGROUP)"
            : "missing (Linux 5.3): apps launch by exec, about 10 ms slower each")
        let appBinary = besideMe.appendingPathComponent("apphost-app").path
        report.add("app-process binary", FileManager.default.isExecutableFile(atPath: appBinary), FileManager.default.isExecutableFile(atPath: appBinary)
            ? "\(appBinary): app processes run the runner alone, without the host's code"
            : "\(appBinary) is missing: app processes run apphost itself, whose own types every type lookup scans too (build the apphost-app product)")
        let sdk = besideMe.appendingPathComponent(launchTemplateSDKFileName).path
        report.add("AppHostKit beside it", FileManager.default.fileExists(atPath: sdk), FileManager.default.fileExists(atPath: sdk)
            ? "\(sdk): the launch template loads it, and a plugin bundle-app linked against it finds it loaded"
            : "\(sdk) is missing: each plugin loads its own AppHostKit, about 0.5 ms of each launch (run swift package bundle-app in this build)")

        // Moving a process between cgroups may wait for an RCU grace period (5.9 ms median in one
        // measurement here, 0.12 ms with favordynmods) unless a hierarchy is mounted with
        // favordynmods; forks and exits across the machine wait with it. The launch template
        // moves after every launch.
        let cgroups = MountTable.entries().filter { $0.type == "cgroup2" || $0.type == "cgroup" }
        let favoring = cgroups.first { $0.superOptions.contains("favordynmods") }
        let remount = cgroups.first { $0.type == "cgroup2" }?.mountPoint ?? cgroups.first?.mountPoint ?? "/sys/fs/cgroup"
        report.add("fast cgroup moves", favoring != nil, favoring.map { "favordynmods (\($0.mountPoint)): a process moves between cgroups at once" }
            ?? "favordynmods is off: each move between cgroups (the launch template's after every launch, an exec'd app "
                + "process's during its launch) may wait for an RCU grace period, milliseconds, and forks and exits on the machine "
                + "wait with it; as root: mount -o remount,favordynmods \(remount) (Linux 6.0 or later), or where the kernel takes it, boot with cgroup_favordynmods=1")

        // What a host started from here inherits: its soft open-file limit raised to the hard one.
        var files = rlimit()
        let hard = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0 ? Int(min(files.rlim_max, rlim_t(Int.max))) : 1024
        let capacity = HostCapacity.measure(descriptorLimit: hard)
        report.add("app capacity", capacity.apps >= 1000, "a host started from here \(capacity.description)"
            + (capacity.apps >= 1000 ? "" : "; to hold more, \(capacity.remedy)"))

        let effective = statusField("CapEff") ?? "?"
        report.add("host capabilities", true, "effective \(effective), uid \(getuid())\(getuid() == 0 ? " (root: per-app users possible)" : "")")
        return report
    }

    /// How `apphost launch` would confine apps here.
    public var sandbox: String {
        func has(_ name: String) -> Bool { findings.first { $0.name == name }?.available == true }
        var parts = [has("libseccomp user notification") && has("seccomp user notification")
            ? "seccomp with reported violations" : "seccomp, degraded: violations not reported"]
        parts.append(has("Landlock") ? "Landlock" : "no Landlock, degraded")
        parts.append(has("per-app users") ? "per-app users" : "apps as the host's user")
        parts.append(has("cgroup v1 pids controller") ? "pids cgroup" : has("per-app users") ? "RLIMIT_NPROC" : "no process limit, degraded")
        return "sandbox: " + parts.joined(separator: ", ")
    }

    /// The sandbox's guarantees, each with what holds it here or what is lost without it.
    public var guarantees: [String] {
        func has(_ name: String) -> Bool { findings.first { $0.name == name }?.available == true }
        let namespaces = has("PID and mount namespaces")
        var lines: [String] = []
        lines.append(namespaces
            ? "holds: no app process outlives the host, even one killed with SIGKILL (each app is in its own PID namespace, which the kernel ends with its init)"
            : "DEGRADED: a process an app spawns can outlive a host killed with SIGKILL, until the next host starts (no PID namespace)")
        lines.append(getuid() == 0
            ? "holds: no app runs as root (each under its own uid, or one shared uid with --no-app-users, from the policy's range)"
            : "holds: no app runs as root (apps run as the host's uid \(getuid()))")
        switch (namespaces, has("Landlock")) {
        case (true, _):
            lines.append("holds: no app changes a file or its metadata outside its containers (every other mount is read-only in its mount namespace)")
        case (false, true):
            lines.append("DEGRADED: an app can change the metadata (chmod, utimensat, setxattr) of what its user owns outside its containers (no mount namespace; Landlock holds the contents)")
        case (false, false):
            lines.append("DEGRADED: an app can change whatever its user owns outside its containers (no mount namespace, no Landlock)")
        }
        lines.append(has("Landlock")
            ? "holds: no app reads outside its containers, its bundle and the system's libraries and configuration (Landlock)"
            : "DEGRADED: an app reads whatever its user may read (no Landlock)")
        switch storageMechanism {
        case .projectQuota?: lines.append("holds: no app stores more than its storage limit (a project quota per container)")
        case .diskImage?: lines.append("holds: no app stores more than its storage limit (a size-limited disk image per container)")
        case .accounting?, nil: lines.append("DEGRADED: an app can fill the host's disk (storage is only accounted: no project quotas, no disk images)")
        }
        return lines
    }

    /// How `apphost launch` would hold apps to their memory limits here.
    public var memory: String {
        let budget = MemoryFootprint.hostCapacity() / 4 * 3
        return findings.first { $0.name == "cgroup v1 memory controller" }?.available == true
            ? "memory: limits by the memory cgroup (the kernel stops an app at its limit), default budget \(budget.mebibytes)"
            : "memory: limits by sampling, degraded (an app can overshoot between samples), default budget \(budget.mebibytes)"
    }

    /// How `apphost launch` would start app processes here (docs/launching.md, "How apps are launched").
    public var launcher: String {
        (geteuid() == 0
            ? "launcher: standby (each app process exec'd ahead of its launch, its own address-space layout; a launch that finds none is exec'd)"
            : "launcher: standby, degraded (each app process exec'd at its launch, its own address-space layout: a host that is not root makes no standbys, its apps' user namespace leaves them no capability to join their mount namespace)")
            + (findings.first { $0.name == "clone3" }?.available == true
                ? "; --launcher template forks them from one process instead (faster in bursts, one layout shared)"
                : "; --launcher template is not available (no clone3)")
    }

    /// The suspension mechanism `apphost launch` would pick here.
    public var suspension: String {
        findings.first { $0.name == "cgroup v2 freezer" }?.available == true
            ? "suspension: cgroup v2 freezer (verified by cgroup.events)"
            : "suspension: SIGSTOP, degraded (verified by /proc/PID/task/*/stat)"
    }

    mutating func add(_ name: String, _ available: Bool, _ detail: String) {
        findings.append(Finding(name: name, available: available, detail: detail))
    }
}
