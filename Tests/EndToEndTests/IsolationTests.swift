// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import AppHostSystem
import CAppHostShims
import Foundation
import Testing

/// What each app's own PID and mount namespaces and its unprivileged user guarantee, against
/// real app processes: no process of an app outlives the host, every process of an app reads its
/// own /proc and no other, no app changes anything outside its containers, and none runs as root
/// (so root-only sockets are out of its reach), with per-app users on or off.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct IsolationTests {
    static let isRoot = getuid() == 0
    static let spawn = ["AppHostEntitlements": ["apphost.process-spawn": true]]

    private func outcomes(_ name: String, scratch: Scratch) -> [String] {
        scratch.recorded(name).filter { $0.hasPrefix("probe ") }
    }

    @Test func processesAnAppSpawnedDoNotOutliveAHostKilledBySIGKILL() throws {
        let scratch = try Scratch()
        // A name of at most 15 bytes (a thread name), unique to this run.
        let name = "orphan-\(getpid() % 100_000)"
        defer { for pid in processes(named: name) { kill(pid, SIGKILL) } }
        let app = try scratch.bundle("Spawner", behavior: ["sandboxProbes": ["spawn-orphans"], "orphanName": name], changes: Self.spawn)
        let host = try HostSession([app], scratch: scratch)
        let namespaced = try host.isNamespaced("Spawner")
        try host.waitFor("Spawner", "didBecomeActive")
        #expect(outcomes("Spawner", scratch: scratch) == ["probe spawn-orphans: ok"])
        // A child that left the app's session and process group, and its own child.
        try waitUntil("the child and the grandchild run") { processes(named: name).count == 2 }
        kill(host.process.processIdentifier, SIGKILL)
        _ = try host.waitForExit()
        guard namespaced else { return }
        try waitUntil("the kernel ends the app's PID namespace", timeout: 5) { processes(named: name).isEmpty }
    }

    @Test func everyProcessOfAnAppReadsItsOwnProcAndNoOtherProcess() throws {
        let scratch = try Scratch()
        let app = try scratch.bundle(
            "Reader", behavior: ["sandboxProbes": ["child-reads-own-proc", "read-host-proc"], "hostPID": Int(getpid())], changes: Self.spawn)
        let host = try HostSession([app], scratch: scratch)
        let namespaced = try host.isNamespaced("Reader")
        try host.waitFor("Reader", "didBecomeActive")
        let observed = outcomes("Reader", scratch: scratch)
        #expect(observed.first == "probe child-reads-own-proc: \(namespaced ? "ok" : "EACCES")")
        // The test's process is not in the app's namespace: it does not exist there.
        #expect(observed.last == "probe read-host-proc: \(namespaced ? "ENOENT" : "EACCES")")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs root (app users)"), arguments: [true, false])
    func noAppChangesAnythingOutsideItsContainers(perAppUsers: Bool) throws {
        let scratch = try Scratch()
        let keeper = try scratch.bundle("Keeper")
        let outside = scratch.url.appendingPathComponent("outside-file")
        try Data("root's".utf8).write(to: outside)
        chmod(outside.path, 0o644)
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.keeper").path
        let targets = [outside.path, scratch.stateDirectory.path, container]
        let probes = ["chmod-targets", "chown-targets", "touch-targets", "xattr-targets"]
        let intruder = try scratch.bundle("Intruder", behavior: ["sandboxProbes": probes, "targets": targets])
        let arguments = perAppUsers ? [] : ["--no-app-users"]
        let host = try HostSession([keeper, intruder], scratch: scratch, arguments: arguments)
        try host.waitFor("Keeper", "didBecomeActive")
        let before = targets.map(metadata)
        let outsideTimes = times(outside.path)
        host.send("open Intruder")
        let namespaced = try host.isNamespaced("Intruder")
        let uids = try ["Keeper", "Intruder"].map { try uid(of: $0, host) }
        try host.waitFor("Intruder", "didBecomeActive")
        #expect(!uids.contains(0), "no app runs as root: \(uids)")
        #expect((uids[0] == uids[1]) == !perAppUsers, "per-app users \(perAppUsers ? "on" : "off"): \(uids)")
        let observed = outcomes("Intruder", scratch: scratch)
        if namespaced {
            // Every mount but the app's containers is read-only, whoever owns the file, and the
            // other app's container is not there at all; the filter refuses chown outright.
            #expect(observed == probes.map { "probe \($0): \($0 == "chown-targets" ? "EPERM,EPERM,EPERM" : "EROFS,EROFS,ENOENT")" })
        } else {
            #expect(!observed.contains { $0.contains("ok") }, "\(observed)")
        }
        #expect(targets.map(metadata) == before)
        #expect(times(outside.path) == outsideTimes)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs root (app users)"), arguments: [true, false])
    func anotherAppsContainerIsOutOfSightAndReach(perAppUsers: Bool) throws {
        let scratch = try Scratch()
        let keeper = try scratch.bundle("Keeper", behavior: ["sandboxProbes": ["write-documents"]])
        let documents = scratch.stateDirectory.appendingPathComponent("containers/test.keeper/Documents")
        let socketPath = documents.appendingPathComponent("private.sock").path
        let intruder = try scratch.bundle(
            "Intruder", behavior: ["sandboxProbes": ["connect-socket", "read-other"], "socket": socketPath, "otherFile": documents.appendingPathComponent("lifecycle.log").path],
            changes: ["AppHostEntitlements": ["com.apple.security.network.client": true]])
        let host = try HostSession([keeper, intruder], scratch: scratch, arguments: perAppUsers ? [] : ["--no-app-users"])
        try host.waitFor("Keeper", "didBecomeActive")
        // A socket the other app listens on in its own container, open to its user.
        let listener = try listen(at: socketPath)
        defer { close(listener) }
        chmod(socketPath, 0o666)
        host.send("open Intruder")
        let namespaced = try host.isNamespaced("Intruder")
        try host.waitFor("Intruder", "didBecomeActive")
        // With one shared user only the hidden state directory keeps the apps apart.
        #expect(outcomes("Intruder", scratch: scratch) == (namespaced
            ? ["probe connect-socket: ENOENT", "probe read-other: ENOENT"]
            : ["probe connect-socket: \(perAppUsers ? "EACCES" : "ok")", "probe read-other: EACCES"]))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: ContainmentTests.hasPidsCgroup && ContainmentTests.hasLandlock, "needs a writable cgroup v1 pids controller and Landlock"))
    func anAppDoesNotSeeTheOtherAppsGroups() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Keeper"), try scratch.bundle("Lister", behavior: ["sandboxProbes": ["list-cgroup-siblings"]])], scratch: scratch)
        try host.waitFor("Keeper", "didBecomeActive")
        host.send("open Lister")
        try host.waitFor("Lister", "didBecomeActive")
        #expect(outcomes("Lister", scratch: scratch) == ["probe list-cgroup-siblings: EACCES"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs root (a root-only socket)"), arguments: [true, false])
    func aRootOnlySocketIsOutOfReach(perAppUsers: Bool) throws {
        let scratch = try Scratch()
        let path = scratch.url.appendingPathComponent("root.sock").path
        let listener = try listen(at: path)
        defer { close(listener) }
        chmod(path, 0o600)
        let app = try scratch.bundle(
            "Client", behavior: ["sandboxProbes": ["connect-socket"], "socket": path],
            changes: ["AppHostEntitlements": ["com.apple.security.network.client": true]])
        let host = try HostSession([app], scratch: scratch, arguments: perAppUsers ? [] : ["--no-app-users"])
        try host.waitFor("Client", "didBecomeActive")
        #expect(outcomes("Client", scratch: scratch) == ["probe connect-socket: EACCES"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Whether users other than root may make user namespaces here (a kernel switch, a limit
    /// and, on Ubuntu, an AppArmor switch can each forbid it).
    static let unprivilegedUserNamespaces: Bool = {
        func value(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
        return value("/proc/sys/kernel/unprivileged_userns_clone") != "0" && value("/proc/sys/user/max_user_namespaces") != "0"
            && value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != "1"
    }()

    @Test(.enabled(if: isRoot && unprivilegedUserNamespaces, "needs root (to run a host as nobody) and unprivileged user namespaces"))
    func aHostThatIsNotRootIsolatesAppsTheSameWay() throws {
        let scratch = try Scratch()
        let nobody: uid_t = 65534
        chown(scratch.url.path, nobody, nobody)
        let name = "orphan-nr-\(getpid() % 10_000)"
        defer { for pid in processes(named: name) { kill(pid, SIGKILL) } }
        let owned = scratch.url.appendingPathComponent("nobodys-file")
        try Data("nobody's".utf8).write(to: owned)
        chown(owned.path, nobody, nobody)
        let app = try scratch.bundle(
            "Spawner", behavior: [
                "sandboxProbes": ["chmod-targets", "touch-targets", "spawn-orphans"], "targets": [owned.path, "/proc/self/comm"], "orphanName": name,
            ],
            changes: Self.spawn)
        let host = try HostSession([app], scratch: scratch, user: nobody)
        let sandboxed = try #require(try host.waitFor("Spawner", "sandboxed").detail)
        #expect(sandboxed.hasSuffix("own PID and mount namespaces, uid \(nobody)"), "\(sandboxed)")
        try host.waitFor("Spawner", "didBecomeActive")
        // The app runs as the host's user, who owns the file and its /proc entries: only the
        // read-only mounts stop it.
        #expect(outcomes("Spawner", scratch: scratch) == ["probe chmod-targets: EROFS,EROFS", "probe touch-targets: EROFS,EROFS", "probe spawn-orphans: ok"])
        try waitUntil("the child and the grandchild run") { processes(named: name).count == 2 }
        kill(host.process.processIdentifier, SIGKILL)
        _ = try host.waitForExit()
        try waitUntil("the kernel ends the app's PID namespace", timeout: 5) { processes(named: name).isEmpty }
    }

    /// The uid the host reported for the app in its `sandboxed` event.
    private func uid(of name: String, _ host: HostSession) throws -> UInt32 {
        let detail = try #require(try host.waitFor(name, "sandboxed").detail)
        return try #require(detail.split(separator: " ").last.flatMap { UInt32($0) })
    }

    /// Mode and owner.
    private func metadata(_ path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else { return "missing" }
        return "\(String(info.st_mode, radix: 8)) \(info.st_uid):\(info.st_gid)"
    }

    /// Modification and status-change times (any change of metadata, extended attributes
    /// included, moves the second).
    private func times(_ path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else { return "missing" }
        return "\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_ctim.tv_sec).\(info.st_ctim.tv_nsec)"
    }

    /// A listening Unix socket at `path`, owned by the test's user (root).
    private func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() where index < buffer.count - 1 { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && Glibc.listen(fd, 4) == 0, "cannot listen at \(path): errno \(errno)")
        return fd
    }
}

/// The pids of processes whose name (comm) is `name`.
func processes(named name: String) -> [Int32] {
    directoryEntries("/proc").compactMap(Int32.init).filter { pid in
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) == name
    }
}
