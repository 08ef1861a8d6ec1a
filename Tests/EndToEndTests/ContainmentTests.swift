// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import AppHostSystem
import CAppHostShims
import Foundation
import Testing

/// Landlock, per-app users, the pids limit and signals, against real app processes: the Probe
/// fixture tries and records what the kernel answered.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ContainmentTests {
    static let isRoot = getuid() == 0
    static let hasLandlock = apphost_landlock_abi_version() > 0
    static let hasPidsCgroup = access("/sys/fs/cgroup/pids/cgroup.procs", W_OK) == 0

    private func outcomes(_ name: String, scratch: Scratch) -> [String] {
        scratch.recorded(name).filter { $0.hasPrefix("probe ") }
    }

    /// The uid the host reported for the app in its `sandboxed` event.
    private func uid(of name: String, _ host: HostSession) throws -> UInt32 {
        let event = try host.waitFor(name, "sandboxed")
        let detail = try #require(event.detail)
        return try #require(detail.split(separator: " ").last.flatMap { UInt32($0) })
    }

    /// In namespaces (where the machine has them) and without (`--no-namespaces`, where the app
    /// process makes its Landlock ruleset itself, not its init).
    @Test(.enabled(if: hasLandlock, "needs Landlock (see apphost doctor)"), arguments: [true, false])
    func anAppWritesOnlyItsOwnContainer(namespaces: Bool) throws {
        let scratch = try Scratch()
        let other = try scratch.bundle("Keeper", behavior: ["sandboxProbes": ["write-documents"]])
        let secret = scratch.stateDirectory.appendingPathComponent("containers/test.keeper/Documents/probe-write").path
        let reader = try scratch.bundle("Snoop", behavior: [
            "sandboxProbes": ["write-outside", "read-shadow", "read-other", "write-documents"], "otherFile": secret,
        ])
        let host = try HostSession([other, reader], scratch: scratch, arguments: namespaces ? [] : ["--no-namespaces"])
        try host.waitFor("Keeper", "didBecomeActive")
        #expect(FileManager.default.fileExists(atPath: secret))
        host.send("open Snoop")
        // A read-only mount refuses the write before Landlock does, and the other app's
        // container is hidden.
        let namespaced = try host.isNamespaced("Snoop")
        try host.waitFor("Snoop", "didBecomeActive")
        #expect(outcomes("Snoop", scratch: scratch) == [
            "probe write-outside: \(namespaced ? "EROFS" : "EACCES")", "probe read-shadow: EACCES",
            "probe read-other: \(namespaced ? "ENOENT" : "EACCES")", "probe write-documents: ok",
        ])
        #expect(!FileManager.default.fileExists(atPath: "/tmp/apphost-probe-outside"))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: hasLandlock, "needs Landlock (see apphost doctor)"))
    func anAppGroupContainerIsWritableByItsMembers() throws {
        let scratch = try Scratch()
        let entitlements = ["com.apple.security.application-groups": ["group.test.shared"]]
        let member = try scratch.bundle("Member", behavior: ["sandboxProbes": ["write-group"], "group": "group.test.shared"], changes: ["AppHostEntitlements": entitlements])
        let stranger = try scratch.bundle("Stranger", behavior: ["sandboxProbes": ["write-group", "read-other"], "group": "group.test.shared",
                                                                 "otherFile": scratch.stateDirectory.appendingPathComponent("groups/group.test.shared/probe-group").path])
        let host = try HostSession([member, stranger], scratch: scratch)
        try host.waitFor("Member", "didBecomeActive")
        #expect(outcomes("Member", scratch: scratch) == ["probe write-group: ok"])
        let shared = scratch.stateDirectory.appendingPathComponent("groups/group.test.shared/probe-group").path
        #expect(FileManager.default.fileExists(atPath: shared))
        host.send("open Stranger")
        let hidden = try host.isNamespaced("Stranger") ? "ENOENT" : "EACCES"
        try host.waitFor("Stranger", "didBecomeActive")
        #expect(outcomes("Stranger", scratch: scratch) == ["probe write-group: no group container", "probe read-other: \(hidden)"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs a root host: only root runs apps under their own users"))
    func eachAppRunsAsItsOwnUserAndOwnsItsContainer() throws {
        let scratch = try Scratch()
        let secondBundle = try scratch.bundle("Second")
        let host = try HostSession([try scratch.bundle("First"), secondBundle], scratch: scratch)
        let first = try uid(of: "First", host)
        try host.waitFor("First", "didBecomeActive")
        host.send("open Second")
        let second = try uid(of: "Second", host)
        #expect(first >= 2_000_000_000 && second >= 2_000_000_000 && first != second)
        for (name, uid) in [("first", first), ("second", second)] {
            var info = stat()
            #expect(stat(scratch.stateDirectory.appendingPathComponent("containers/test.\(name)").path, &info) == 0)
            #expect(info.st_uid == uid && info.st_gid == uid)
            #expect(info.st_mode & 0o777 == 0o700)
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        // The same uid at the next launch: the app finds its container as it left it.
        let again = try HostSession([secondBundle], scratch: scratch)
        #expect(try uid(of: "Second", again) == second)
        again.closeInput()
        #expect(try again.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs a root host to make a set-user-id-root binary"))
    func aSetuidRootBinaryGainsNothing() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Elevator", behavior: ["sandboxProbes": ["setuid"]], changes: ["AppHostEntitlements": ["apphost.process-spawn": true]])
        let binary = bundle.appendingPathComponent("id-setuid")
        try FileManager.default.copyItem(atPath: "/usr/bin/id", toPath: binary.path)
        #expect(chown(binary.path, 0, 0) == 0 && chmod(binary.path, 0o4755) == 0)
        var plist = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: bundle.appendingPathComponent("Info.plist")), format: nil) as? [String: Any])
        plist["ProbeBehavior"] = ["sandboxProbes": ["setuid"], "setuidBinary": binary.path]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: bundle.appendingPathComponent("Info.plist"))
        let host = try HostSession([bundle], scratch: scratch)
        let uid = try uid(of: "Elevator", host)
        try host.waitFor("Elevator", "didBecomeActive")
        // Without NO_NEW_PRIVS, id would print euid=0.
        #expect(outcomes("Elevator", scratch: scratch) == ["probe setuid: output uid=\(uid) gid=\(uid) groups=\(uid)"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot && hasPidsCgroup, "needs a root host with the cgroup v1 pids controller"))
    func aForkBombStopsAtThePidsLimitAndLeavesNothingBehind() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Bomb", behavior: ["sandboxProbes": ["fork-bomb"]], changes: ["AppHostEntitlements": ["apphost.process-spawn": true]])
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--process-limit", "40"])
        let uid = try uid(of: "Bomb", host)
        let active = try host.waitFor("Bomb", "didBecomeActive")
        let groups = try String(contentsOfFile: "/proc/\(try #require(active.pid))/cgroup", encoding: .utf8)
        let outcome = try #require(outcomes("Bomb", scratch: scratch).first)
        // 40 tasks: the app's own threads count, so fewer than 40 children.
        let children = try #require(Int(outcome.split(separator: " ")[2]))
        #expect(children > 0 && children < 40, "\(outcome)")
        #expect(outcome.hasSuffix("children, then EAGAIN"))
        // The host still answers.
        host.send("ps")
        try host.waitFor("ps of Bomb", timeout: 5) { $0.event == "ps" && $0.name == "Bomb" }
        // Bomb's processes, told apart by their cgroups (the app process's) from other tests'
        // apps that may share its uid.
        let bombProcesses = processes(ofUser: uid).filter { pid in
            (try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)) == groups
        }
        #expect(!bombProcesses.isEmpty)
        host.send("terminate Bomb")
        try host.waitFor("Bomb", "terminated")
        // Every child was killed with the app; one may still be on its way out.
        for pid in bombProcesses {
            #expect(waitUntilGone(pid, timeout: 5), "child \(pid) outlived the app")
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func signallingTheHostOrAnotherAppIsRefused() throws {
        let scratch = try Scratch()
        let target = try scratch.bundle("Target")
        // With the spawn entitlement the filter lets kill through: the per-app user and
        // Landlock's signal scope must still refuse it. Without it, the filter refuses.
        let spawner = try scratch.bundle("Spawner", behavior: ["sandboxProbes": ["kill-host", "kill-other"]], changes: ["AppHostEntitlements": ["apphost.process-spawn": true]])
        let plain = try scratch.bundle("Plain", behavior: ["sandboxProbes": ["kill-host", "kill-other"]])
        let host = try HostSession([target, spawner, plain], scratch: scratch)
        let targetPID = try #require(try host.waitFor("Target", "didBecomeActive").pid)
        for name in ["Spawner", "Plain"] {
            let documents = scratch.stateDirectory.appendingPathComponent("containers/test.\(name.lowercased())/Documents")
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            try "\(targetPID)".write(to: documents.appendingPathComponent("target-pid"), atomically: true, encoding: .utf8)
        }
        // With the spawn entitlement only a per-app user (root host) or Landlock's signal scope
        // (ABI 6) stands between the app and same-user processes: README says so.
        // With the spawn entitlement, in its own PID namespace, another app does not exist for
        // it, and its parent is the namespace's init (which takes no signal from it); without,
        // the filter refuses first.
        let expected = Self.isRoot || apphost_landlock_abi_version() >= 6
        host.send("open Spawner")
        let other = try host.isNamespaced("Spawner") ? "ESRCH" : "EPERM"
        try host.waitFor("Spawner", "didBecomeActive")
        if expected { #expect(outcomes("Spawner", scratch: scratch) == ["probe kill-host: EPERM", "probe kill-other: \(other)"]) }
        host.send("open Plain")
        try host.waitFor("Plain", "didBecomeActive")
        #expect(outcomes("Plain", scratch: scratch) == ["probe kill-host: EPERM", "probe kill-other: EPERM"])
        #expect(processExists(targetPID))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Live (not zombie) processes owned by `uid`.
    private func processes(ofUser uid: UInt32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            var info = stat()
            return stat("/proc/\(pid)", &info) == 0 && info.st_uid == uid && processExists(pid)
        }
    }
}
