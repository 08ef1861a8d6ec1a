import Glibc
import Testing

import AppHostSystem

/// A host killed by SIGKILL leaves its groups behind; the next host to start removes them.
@Suite struct CgroupSweepTests {
    static let pids = Cgroup.hostDirectory(in: .controller("pids"))
    static let usable = getuid() == 0 && pids.map { access($0 + "/cgroup.procs", W_OK) == 0 } == true

    @Test(.enabled(if: usable, "needs root and a writable cgroup v1 pids hierarchy"))
    func aGoneHostsGroupsAreRemovedAtEveryDepth() throws {
        let base = Cgroup(path: try #require(Self.pids))
        // No process has the largest pid: the host that made this group is gone.
        let stale = try base.makeChild(named: "apphost-sweep-\(Int32.max)")
        defer { stale.removeTree() }
        let app = try stale.makeChild(named: "App-1")
        _ = try app.makeChild(named: "inner")
        // A v1 group's `tasks` and `notify_on_release` are files, not groups.
        #expect(stale.subgroups == [app])

        let instance = try Cgroup.instance("sweep", in: .controller("pids"))
        defer { instance.removeWaiting() }
        #expect(access(stale.path, F_OK) == -1 && errno == ENOENT, "the gone host's groups are removed")
        #expect(access(instance.path, F_OK) == 0)
    }
}
