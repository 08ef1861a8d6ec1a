import Foundation
import Synchronization
import AppHostProtocol
import CAppHostShims
import AppHostSandbox
import AppHostSystem

// What Launchpad needs of the host and says of itself (the launcher in use, for the `started`
// event), the names of a launch's groups, and the groups the template waits in.
extension Launchpad {
    /// What it needs of the host.
    struct Context {
        let configuration: Supervisor.Configuration
        let environment: HostEnvironment
        let spawner: SpawnThread
        let queue: DispatchQueue
        let timers: HostTimers
        let clock: any HostClock
        /// The host's count of container mounts (a standby made before a mount misses it).
        let mountChanges: () -> Int
        /// Whether the host is shutting down (nothing is made then).
        let isShuttingDown: () -> Bool
        /// Where the template's ends and restarts are said.
        let publish: (HostEvent) -> Void
    }

    /// A name for a launch's groups, never used before in this process: hosts of one process
    /// share their instance's cgroup (its name has the process's pid), and a group a released
    /// host left behind (a process still exiting) is never taken for another host's app.
    func groupName(_ prefix: String) -> String {
        "\(prefix)-\(Self.groupCounter.add(1, ordering: .relaxed).newValue)"
    }

    fileprivate static let groupCounter = Atomic<Int>(0)

    /// Whether the standby launcher makes no standbys here: its apps' namespaces include a user
    /// namespace (the host is not root).
    var execsWithoutStandbys: Bool {
        configuration.launcher == .standby && environment.namespaces.flags & APPHOST_NAMESPACE_USER != 0
    }

    /// Which launcher apps launch with now, for the `started` event.
    var note: String {
        if configuration.launcher == .standby {
            guard !execsWithoutStandbys else {
                return "standby, degraded (each app process exec'd at its launch, its own address-space layout: "
                    + "a host that is not root makes no standbys, its apps' user namespace leaves them no capability to join their mount namespace)"
            }
            let sdk = URL(fileURLWithPath: configuration.appExecutable).deletingLastPathComponent().appendingPathComponent(launchTemplateSDKFileName)
            let loaded = FileManager.default.fileExists(atPath: sdk.path) ? "; \(launchTemplateSDKFileName) beside it" : ""
            return "standby (each launch's app process exec'd ahead, its own address-space layout\(loaded))"
        }
        guard let running = template?.current else {
            if configuration.launcher == .exec { return "exec" }
            if isStartingTemplate { return "template (starting; each launch's app process made ahead)" }
            return apphost_clone3_available() != 0 ? "exec (the launch template is not running)" : "exec (this kernel has no clone3)"
        }
        let binary = configuration.appExecutable == configuration.executable ? "; app processes run apphost itself: apphost-app is not beside it" : ""
        let sdk = URL(fileURLWithPath: configuration.appExecutable).deletingLastPathComponent().appendingPathComponent(launchTemplateSDKFileName)
        let loaded = FileManager.default.fileExists(atPath: sdk.path) ? "; \(launchTemplateSDKFileName) beside it" : ""
        return "template (pid \(running.pid)\(loaded); each launch's app process made ahead)\(binary)"
    }


    /// Whether a launch now would take a standby that has finished starting: it said hello (it
    /// does once it has done what it does ahead), which waits unread on its control socket.
    /// Nil if this launcher makes none here.
    var isStandbyWarm: Bool? {
        guard template != nil || (configuration.launcher == .standby && !execsWithoutStandbys) else { return nil }
        guard let standby, !isMakingStandby else { return false }
        var socket = pollfd(fd: standby.spawned.control, events: Int16(POLLIN), revents: 0)
        return poll(&socket, 1, 0) == 1 && socket.revents & Int16(POLLIN) != 0
    }
}

/// The next launch's cgroup v1 groups (pids, memory), which the template is moved into ahead of
/// it: its fork is born in them (as in the freezer group, by CLONE_INTO_CGROUP).
struct WaitingGroups {
    var pids: Cgroup?
    var memory: MemoryGroup?
}
