/// How many apps can run in one host at once, and which of the machine's limits says so
/// (docs/launching.md, "How many apps fit"): each app process costs the host descriptors, and costs the
/// machine tasks (its process, its namespace's init, their threads). Past the bound a launch is
/// refused in one line naming the limit, never left to fail as a bare "terminated".
public struct HostCapacity: Sendable, Equatable {
    /// Descriptors the host holds for one running or suspended app: its process's pidfd (and in
    /// namespaces its init's, and the init's channel), the control socket, the output pipe, the
    /// diagnostics socket, the seccomp listener, and the memory cgroup's OOM eventfd (cgroup v1).
    public static let descriptorsPerApp = 8
    /// Descriptors kept free for everything else (stores, reports, the control socket's clients,
    /// a launch's transient ones).
    public static let descriptorReserve = 256
    /// Tasks (processes and threads) one suspended app holds: the app process's threads and its
    /// namespace's init, measured on this machine kind with headroom.
    public static let tasksPerApp = 4

    /// The bound, in apps.
    public var apps: Int
    /// The limit that sets it, for the person reading: "RLIMIT_NOFILE 20000 (8 descriptors an
    /// app)", "kernel.pid_max 32768 (4 tasks an app)".
    public var boundBy: String
    /// What to do to allow more.
    public var remedy: String

    /// The capacity under a descriptor limit (`descriptors`, of which `openAtStart` are in use)
    /// and the kernel's task limit (`pidMax`, of which `tasksAtStart` are taken).
    public init(descriptors: Int, openAtStart: Int, pidMax: Int, tasksAtStart: Int) {
        let byDescriptors = max(0, (descriptors - openAtStart - Self.descriptorReserve) / Self.descriptorsPerApp)
        let byTasks = max(0, (pidMax - tasksAtStart - Self.descriptorReserve) / Self.tasksPerApp)
        if byDescriptors <= byTasks {
            apps = byDescriptors
            boundBy = "RLIMIT_NOFILE \(descriptors) (\(Self.descriptorsPerApp) descriptors an app)"
            remedy = "raise the host's open-file limit (ulimit -n, or LimitNOFILE= in its unit)"
        } else {
            apps = byTasks
            boundBy = "kernel.pid_max \(pidMax) (\(Self.tasksPerApp) tasks an app)"
            remedy = "raise kernel.pid_max (sysctl -w kernel.pid_max=4194304)"
        }
    }

    /// Why launching `name` now would pass the bound, or nil if it fits: a clear refusal, not a
    /// launch that fails for want of a descriptor. `running` counts the apps whose process is
    /// alive; it is asked only when `installed` apps could reach the bound (no walk over
    /// thousands on every launch below it).
    public func refusal(launching name: String, installed: Int, running: () -> Int) -> String? {
        guard installed > apps else { return nil }
        let count = running()
        guard count >= apps else { return nil }
        return "cannot launch \(name): \(count) apps run, the most this host can hold under \(boundBy); \(remedy), or end an app"
    }

    /// "holds 2468 apps (bound by RLIMIT_NOFILE 20000 (8 descriptors an app))".
    public var description: String { "holds \(apps) apps (bound by \(boundBy))" }
}
