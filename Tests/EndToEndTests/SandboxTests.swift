import Foundation
import Testing

/// Confinement that is in place today: capabilities, NO_NEW_PRIVS, resource limits. Each test
/// reads what the app process itself sees in /proc/self/status and getrlimit.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SandboxTests {
    static let isRoot = getuid() == 0

    private func confinement(of name: String, scratch: Scratch) throws -> (status: String, limits: String) {
        let status = try #require(scratch.recorded(name).first { $0.hasPrefix("status ") })
        let limits = try #require(scratch.recorded(name).first { $0.hasPrefix("limits ") })
        return (status, limits)
    }

    @Test func anAppHoldsNoCapabilityAndCannotGainPrivileges() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Plain", behavior: ["recordStatus": true])], scratch: scratch)
        try host.waitFor("Plain", "didBecomeActive")
        let (status, limits) = try confinement(of: "Plain", scratch: scratch)
        for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
            #expect(status.contains("\(set)=0000000000000000"), "\(set) is empty: \(status)")
        }
        if Self.isRoot {
            // Only a host with CAP_SETPCAP can empty the bounding set; a non-root one cannot,
            // and NO_NEW_PRIVS makes its bounding set irrelevant.
            #expect(status.contains("CapBnd=0000000000000000"), "the bounding set is empty: \(status)")
        }
        #expect(status.contains("NoNewPrivs=1"))
        #expect(limits == "limits core=0 nofile=1024")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: isRoot, "needs a root host: only a host that holds a capability can grant it"))
    func anAllowedCapabilityIsKeptAndNothingElse() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Binder", behavior: ["recordStatus": true], changes: ["AppHostCapabilities": ["CAP_NET_BIND_SERVICE"]])
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--allow-capability", "CAP_NET_BIND_SERVICE", "--open-file-limit", "256"])
        try host.waitFor("Binder", "didBecomeActive")
        let (status, limits) = try confinement(of: "Binder", scratch: scratch)
        // CAP_NET_BIND_SERVICE is capability 10: bit 0x400.
        #expect(status.contains("CapPrm=0000000000000400"))
        #expect(status.contains("CapEff=0000000000000400"))
        #expect(status.contains("CapBnd=0000000000000400"))
        #expect(status.contains("CapInh=0000000000000000"))
        #expect(status.contains("CapAmb=0000000000000000"))
        #expect(limits == "limits core=0 nofile=256")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// An app launched from a standby (made ahead of its launch, which drops every capability the
    /// policy allows no app) keeps what it asks for and nothing else too: the capability the
    /// policy allows is in the sets of the app that asks for it, and in none of the other's.
    @Test(.enabled(if: isRoot, "needs a root host: only a host that holds a capability can grant it"))
    func appsLaunchedFromAStandbyKeepOnlyTheCapabilityTheyAskFor() throws {
        let scratch = try Scratch()
        let first = try scratch.bundle("First")
        let binder = try scratch.bundle("Binder", behavior: ["recordStatus": true], changes: ["AppHostCapabilities": ["CAP_NET_BIND_SERVICE"]])
        let plain = try scratch.bundle("Plain", behavior: ["recordStatus": true])
        // Accounting only: a first launch that mounts its container's image takes no standby.
        let host = try HostSession(
            [first, binder, plain], scratch: scratch, arguments: ["--allow-capability", "CAP_NET_BIND_SERVICE", "--storage", "accounting"])
        // The first launch takes no standby; each after it takes the one made once it settled.
        try host.waitFor("First", "didBecomeActive")
        host.send("open Plain")
        try host.waitFor("Plain", "didBecomeActive")
        host.send("open Binder")
        try host.waitFor("Binder", "didBecomeActive")
        let (plainStatus, _) = try confinement(of: "Plain", scratch: scratch)
        for set in ["CapPrm", "CapEff", "CapBnd", "CapInh", "CapAmb"] {
            #expect(plainStatus.contains("\(set)=0000000000000000"), "\(set) of Plain")
        }
        let (binderStatus, _) = try confinement(of: "Binder", scratch: scratch)
        for set in ["CapPrm", "CapEff", "CapBnd"] {
            #expect(binderStatus.contains("\(set)=0000000000000400"), "\(set) of Binder")
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aCapabilityThePolicyDoesNotAllowIsRefused() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Greedy", changes: ["AppHostCapabilities": ["CAP_SYS_ADMIN"]])
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, bundle.path])
        #expect(result.status == 1)
        #expect(result.error == "apphost: Greedy.app asks for CAP_SYS_ADMIN, which this host's policy does not allow; allow it with --allow-capability CAP_SYS_ADMIN or the policy's allowedCapabilities\n")
    }

    @Test func anUnknownCapabilityInThePolicyIsRefused() throws {
        let scratch = try Scratch()
        let result = try runApphost(["launch", "--allow-capability", "CAP_MAKE_COFFEE", try scratch.bundle("Any").path])
        #expect(result.status == 1)
        #expect(result.error == "apphost: allowedCapabilities: CAP_MAKE_COFFEE is not a capability this kernel knows (see capabilities(7))\n")
    }
}
