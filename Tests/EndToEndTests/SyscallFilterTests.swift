import Foundation
import Testing

/// The seccomp profile against real app processes: the Probe fixture tries each call (its
/// `sandboxProbes`) and records what the kernel answered; the host's events and reports must
/// name every refusal.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SyscallFilterTests {
    static let hasNotification = ((try? String(contentsOfFile: "/proc/sys/kernel/seccomp/actions_avail", encoding: .utf8)) ?? "").contains("user_notif")

    private func probe(
        _ name: String, _ probes: [String], entitlements: [String: Any]? = nil, arguments: [String] = [],
        scratch: Scratch, extra: [String: Any] = [:]
    ) throws -> HostSession {
        var changes: [String: Any?] = [:]
        if let entitlements { changes["AppHostEntitlements"] = entitlements }
        let bundle = try scratch.bundle(name, behavior: ["sandboxProbes": probes].merging(extra) { $1 }, changes: changes)
        return try HostSession([bundle], scratch: scratch, arguments: arguments)
    }

    private func outcomes(_ name: String, scratch: Scratch) -> [String] {
        scratch.recorded(name).filter { $0.hasPrefix("probe ") }
    }

    private func report(of ended: Event) throws -> [String: Any] {
        let path = try #require(ended.report)
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    private func violations(_ host: HostSession) -> [String] {
        host.allEvents.filter { $0.event == "violation" }.map { "\($0.detail ?? "") while \($0.state ?? "")" }
    }

    @Test(.enabled(if: hasNotification, "needs seccomp user notification (SECCOMP_RET_USER_NOTIF) to report refusals"))
    func aSocketWithoutTheNetworkEntitlementIsRefusedAndReported() throws {
        let scratch = try Scratch()
        let host = try probe("Offline", ["socket-inet", "socket-unix"], scratch: scratch)
        try host.waitFor("Offline", "didBecomeActive")
        #expect(outcomes("Offline", scratch: scratch) == ["probe socket-inet: EPERM", "probe socket-unix: EPERM"])
        #expect(violations(host) == ["socket(AF_INET) refused (EPERM) while launching", "socket(AF_UNIX) refused (EPERM) while launching"])
        host.send("ps")
        let status = try host.waitFor("ps of Offline") { $0.event == "ps" && $0.name == "Offline" }
        #expect(status.fields["violations"] as? Int == 2)
        host.send("terminate Offline")
        let ended = try host.waitFor("Offline", "terminated")
        let report = try self.report(of: ended)
        #expect(report["violationCount"] as? Int == 2)
        let calls = (report["violations"] as? [[String: Any]])?.map { "\($0["call"] as? String ?? "") \($0["state"] as? String ?? "")" }
        #expect(calls == ["socket(AF_INET) launching", "socket(AF_UNIX) launching"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// glibc asks nscd first at a process's first user or group look-up, over a socket(AF_UNIX)
    /// the sandbox refuses: UserDefaults alone made two violations in every app that used it.
    /// Asked outside the sandbox (before the template's forks, or before an exec'd app
    /// process's confinement), glibc has stopped asking: nothing is refused.
    /// Where nscd or systemd's userdb service answers look-ups, glibc keeps asking them over a
    /// socket(AF_UNIX), which an app without the network entitlements may not make.
    static let lookUpsUseOnlyFiles = !["/var/run/nscd/socket", "/run/systemd/userdb"].contains(where: FileManager.default.fileExists(atPath:))

    @Test(
        .enabled(if: hasNotification, "needs seccomp user notification (SECCOMP_RET_USER_NOTIF) to report refusals"),
        .enabled(if: lookUpsUseOnlyFiles, "nscd or systemd-userdbd runs here: glibc asks it over a socket(AF_UNIX), reported as a violation"))
    func userAndGroupLookUpsAreNoViolations() throws {
        let scratch = try Scratch()
        let host = try probe("Lookups", ["user-defaults", "look-up-user", "look-up-group"], scratch: scratch)
        try host.waitFor("Lookups", "didBecomeActive")
        #expect(outcomes("Lookups", scratch: scratch) == ["probe user-defaults: done", "probe look-up-user: done", "probe look-up-group: done"])
        #expect(violations(host).isEmpty)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Hole (issue 12, items 1 and 5): an app planted a set-user-id copy of a binary, which
    /// another user then ran with the app's uid (or root's, for a root app). No app makes a
    /// set-id file, in any user mode: the mode bits are refused, the call reported.
    @Test func noAppMakesASetIDFile() throws {
        let scratch = try Scratch()
        let host = try probe("Planter", ["chmod-setuid", "open-setuid", "chmod-plain"], scratch: scratch)
        try host.waitFor("Planter", "didBecomeActive")
        #expect(outcomes("Planter", scratch: scratch) == ["probe chmod-setuid: EPERM", "probe open-setuid: EPERM", "probe chmod-plain: ok"])
        if Self.hasNotification {
            #expect(violations(host) == ["chmod(mode 04755) refused (EPERM) while launching", "openat(mode 04755) refused (EPERM) while launching"])
        }
        let documents = scratch.stateDirectory.appendingPathComponent("containers/test.planter/Documents")
        let mode = try FileManager.default.attributesOfItem(atPath: documents.appendingPathComponent("setuid-chmod").path)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o6000 } == 0, "the file has no set-id bit")
        #expect(!FileManager.default.fileExists(atPath: documents.appendingPathComponent("setuid-open").path))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func withTheNetworkEntitlementsSocketsWork() throws {
        let scratch = try Scratch()
        let host = try probe(
            "Online", ["socket-inet", "socket-unix", "listen"],
            entitlements: ["com.apple.security.network.client": true, "com.apple.security.network.server": true], scratch: scratch)
        try host.waitFor("Online", "didBecomeActive")
        #expect(outcomes("Online", scratch: scratch) == ["probe socket-inet: ok", "probe socket-unix: ok", "probe listen: ok"])
        #expect(violations(host).isEmpty)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aClientCannotListen() throws {
        let scratch = try Scratch()
        let host = try probe("Client", ["socket-inet", "listen"], entitlements: ["com.apple.security.network.client": true], scratch: scratch)
        try host.waitFor("Client", "didBecomeActive")
        #expect(outcomes("Client", scratch: scratch) == ["probe socket-inet: ok", "probe listen: EPERM"])
        if Self.hasNotification { #expect(violations(host) == ["bind refused (EPERM) while launching"]) }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(arguments: [
        ("ptrace-host", "ptrace"), ("mount", "mount"), ("unshare-user", "unshare(CLONE_NEWUSER)"), ("bpf", "bpf"),
        // Regression (issue 12, item 6): a call through another ABI killed only the calling
        // thread, with no violation: the app carried on.
        ("int80-getpid", "int 0x80 (i386) system call 20"), ("x32-getpid", "x32 system call 39"),
    ])
    func aDangerousCallKillsTheAppBySIGSYS(probe name: String, call: String) throws {
        let scratch = try Scratch()
        let host = try probe("Rogue", [name, "thread"], scratch: scratch)
        let ended = try host.waitFor("Rogue", "terminated")
        // The call never ran and nothing after it did.
        #expect(outcomes("Rogue", scratch: scratch) == [])
        let report = try self.report(of: ended)
        #expect(report["signal"] as? String == "SIGSYS")
        if Self.hasNotification {
            #expect(ended.kind == "forbidden-syscall")
            #expect(ended.namespace == "SANDBOX")
            #expect(ended.code == "31")
            #expect(ended.reason == "made the forbidden system call \(call) while launching; killed by SIGSYS")
            #expect(violations(host) == ["\(call) is forbidden: killed by SIGSYS while launching"])
            #expect((report["violations"] as? [[String: Any]])?.first?["call"] as? String == call)
            #expect((report["violations"] as? [[String: Any]])?.first?["fatal"] as? Bool == true)
        }
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.sandbox)
    }

    @Test func forkAndExecWithoutTheSpawnEntitlementAreRefusedButThreadsWork() throws {
        let scratch = try Scratch()
        let host = try probe("Solo", ["fork", "exec", "thread"], scratch: scratch)
        try host.waitFor("Solo", "didBecomeActive")
        #expect(outcomes("Solo", scratch: scratch) == ["probe fork: EPERM", "probe exec: EPERM", "probe thread: ok"])
        if Self.hasNotification {
            // glibc's fork is clone(CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD).
            #expect(violations(host) == ["clone(0x1200011) refused (EPERM) while launching", "execve refused (EPERM) while launching"])
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func withTheSpawnEntitlementForkWorks() throws {
        let scratch = try Scratch()
        let host = try probe("Parent", ["fork", "thread"], entitlements: ["apphost.process-spawn": true], scratch: scratch)
        try host.waitFor("Parent", "didBecomeActive")
        #expect(outcomes("Parent", scratch: scratch) == ["probe fork: ok", "probe thread: ok"])
        #expect(violations(host).isEmpty)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func highBitsInAnIoctlRequestDoNotSlipPastTheRule() throws {
        let scratch = try Scratch()
        let host = try probe("Typist", ["ioctl-tiocsti", "ioctl-tiocsti-high-bits", "ioctl-fionread", "ioctl-siocoutq"], scratch: scratch)
        try host.waitFor("Typist", "didBecomeActive")
        // Allowed, TIOCSTI on a pipe would be ENOTTY; FIONREAD and SIOCOUTQ (what libcurl asks of
        // its sockets) on the control socket are allowed.
        #expect(outcomes("Typist", scratch: scratch) == [
            "probe ioctl-tiocsti: EPERM", "probe ioctl-tiocsti-high-bits: EPERM", "probe ioctl-fionread: ok", "probe ioctl-siocoutq: ok",
        ])
        if Self.hasNotification {
            #expect(violations(host) == [
                "ioctl(0x5412) refused (EPERM) while launching", "ioctl(0xffffffff00005412) refused (EPERM) while launching",
            ])
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func thePolicyCanTerminateAnAppForRepeatedViolations() throws {
        let scratch = try Scratch()
        let host = try probe("Pest", ["socket-inet", "socket-inet", "socket-inet"], arguments: ["--maximum-violations", "2"], scratch: scratch)
        let ended = try host.waitFor("Pest", "terminated")
        #expect(ended.kind == "sandbox-violations")
        #expect(ended.reason == "made 2 refused system calls (the policy allows 2); the last: socket(AF_INET)")
        #expect(outcomes("Pest", scratch: scratch) == ["probe socket-inet: EPERM"])
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.sandbox)
    }
}
