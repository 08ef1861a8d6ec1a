import Foundation
import Testing

/// 0xdead10cc: an app that would be suspended while it holds a lock in an app-group container,
/// or has a declared shared resource open, is terminated and the report names what it held. The
/// Probe fixture takes the lock (or transaction, file, connection) in didFinishLaunching.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SharedResourceTests {
    static let group = "group.test.shared"
    static let entitlements = ["com.apple.security.application-groups": [group]]

    private func holder(_ name: String, _ scratch: Scratch, hold: [String: Any], releaseIn: String? = nil) throws -> URL {
        var behavior: [String: Any] = ["hold": hold]
        behavior["releaseIn"] = releaseIn
        return try scratch.bundle(name, behavior: behavior, changes: ["AppHostEntitlements": Self.entitlements])
    }

    /// Sends the app home and returns its `terminated` event, checking it is a 0xdead10cc kill
    /// and that the app was never suspended.
    private func sendHomeExpectingDeadlock(_ name: String, _ host: HostSession) throws -> Event {
        try host.waitFor(name, "didBecomeActive")
        host.send("home")
        let end = try host.waitFor(name, "terminated")
        #expect(end.namespace == "RUNNINGBOARD")
        #expect(end.code == "0xdead10cc")
        #expect(end.kind == "shared-resource")
        #expect(!host.allEvents.contains { $0.name == name && $0.event == "suspended" })
        return end
    }


    @Test(arguments: [
        ("flock", "write", false), ("posix", "read", false), ("ofd", "write", true),
    ])
    func aLockInAGroupContainerIsFatalAtSuspension(kind: String, type: String, onThread: Bool) throws {
        let scratch = try Scratch()
        let bundle = try holder("Locker", scratch, hold: ["lock": kind, "type": type, "group": Self.group, "file": "state.lock", "onThread": onThread])
        let host = try HostSession([bundle], scratch: scratch)
        let end = try sendHomeExpectingDeadlock("Locker", host)
        let label = ["flock": "flock", "posix": "POSIX", "ofd": "OFD"][kind]!
        let path = scratch.stateDirectory.resolvingSymlinksInPath().appendingPathComponent("groups/\(Self.group)/state.lock").path
        #expect(end.reason == "held a \(label) \(type) lock on \(path) when it would have been suspended")
        let report = try Report(end)
        #expect(report["state"] as? String == "background")
        let held = try #require(report["held"] as? [[String: Any]])
        #expect(held.count == 1)
        #expect(held.first?["path"] as? String == path)
        let lock = held.first?["lock"] as? [String: String]
        #expect(lock == ["kind": label, "type": type, "range": "0-EOF"])
        #expect(scratch.recorded("Locker").contains("holding \(kind) lock on \(path): ok"))
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    /// Every slot of a large descriptor table is examined: a lock behind 700 other descriptors
    /// is found.
    @Test func aLockBehindManyDescriptorsIsFound() throws {
        let scratch = try Scratch()
        let bundle = try holder("Crowded", scratch, hold: ["lock": "posix", "group": Self.group, "padding": 700])
        let host = try HostSession([bundle], scratch: scratch)
        let end = try sendHomeExpectingDeadlock("Crowded", host)
        #expect(try #require(end.reason).hasPrefix("held a POSIX write lock on "))
        let held = try #require(try Report(end)["held"] as? [[String: Any]])
        #expect(held.count == 1)
        let fd = try #require(held.first?["fd"] as? Int)
        #expect(fd > 700, "the lock's descriptor, after the padding: \(fd)")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test func theCheckAlsoGuardsSuspensionBySIGSTOP() throws {
        let scratch = try Scratch()
        let bundle = try holder("Stopper", scratch, hold: ["lock": "posix", "group": Self.group])
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--suspension", "sigstop"])
        let end = try sendHomeExpectingDeadlock("Stopper", host)
        #expect(try #require(end.reason).hasPrefix("held a POSIX write lock on "))
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test(arguments: ["didEnterBackground", "task"])
    func anAppThatReleasesItsLockBeforeSuspensionIsSuspended(releaseIn: String) throws {
        let scratch = try Scratch()
        let bundle = try holder("Careful", scratch, hold: ["lock": "flock", "group": Self.group], releaseIn: releaseIn)
        let host = try HostSession([bundle], scratch: scratch)
        try host.waitFor("Careful", "didBecomeActive")
        host.send("home")
        try host.waitFor("Careful", "suspended")
        #expect(scratch.recorded("Careful").contains("released 1 descriptors"))
        if releaseIn == "task" {
            // The lock was still held while the task ran; the check came only at suspension.
            let ended = try host.waitFor("Careful", "backgroundTaskEnded")
            let suspended = try host.waitFor("Careful", "suspended")
            #expect(try #require(ended.time) <= #require(suspended.time))
        }
        host.send("open Careful")
        try host.waitFor("Careful", "didBecomeActive", occurrence: 2)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        #expect(!host.allEvents.contains { $0.event == "terminated" && $0.kind == "shared-resource" })
    }

    @Test func aSQLiteTransactionInAGroupContainerIsFatalAtSuspension() throws {
        let scratch = try Scratch()
        let bundle = try holder("Ledger", scratch, hold: ["sqlite": "forecast.sqlite", "group": Self.group])
        let host = try HostSession([bundle], scratch: scratch)
        let end = try sendHomeExpectingDeadlock("Ledger", host)
        let path = scratch.stateDirectory.resolvingSymlinksInPath().appendingPathComponent("groups/\(Self.group)/forecast.sqlite").path
        // SQLite's RESERVED lock (one byte past its pending byte, written) and its SHARED lock
        // (the 510 bytes after it, read), both POSIX locks.
        let held = try #require(try Report(end)["held"] as? [[String: Any]])
        #expect(held.map { $0["path"] as? String } == [path, path])
        let locks = Set(held.compactMap { $0["lock"] as? [String: String] })
        #expect(locks == [
            ["kind": "POSIX", "type": "write", "range": "1073741825-1073741825"],
            ["kind": "POSIX", "type": "read", "range": "1073741826-1073742335"],
        ])
        let reason = try #require(end.reason)
        #expect(reason.hasPrefix("held a POSIX "))
        #expect(reason.hasSuffix(" on \(path) when it would have been suspended (and 1 more, listed in the report)"))
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test func aSQLiteDatabaseCommittedInDidEnterBackgroundIsSuspended() throws {
        let scratch = try Scratch()
        let bundle = try holder("Tidy", scratch, hold: ["sqlite": "forecast.sqlite", "group": Self.group], releaseIn: "didEnterBackground")
        let host = try HostSession([bundle], scratch: scratch)
        try host.waitFor("Tidy", "didBecomeActive")
        host.send("home")
        try host.waitFor("Tidy", "suspended")
        #expect(scratch.recorded("Tidy").contains("released sqlite: committed"))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(arguments: [nil, "didEnterBackground"] as [String?])
    func aDeclaredDeviceOpenAtSuspensionIsFatal(releaseIn: String?) throws {
        let scratch = try Scratch()
        // /dev/zero stands in for a camera: a device the app may read (Landlock allows it).
        var behavior: [String: Any] = ["hold": ["open": "/dev/zero"]]
        behavior["releaseIn"] = releaseIn
        let bundle = try scratch.bundle("Camera", behavior: behavior)
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--shared-resource", "/dev/zero"])
        guard releaseIn == nil else {
            try host.waitFor("Camera", "didBecomeActive")
            host.send("home")
            try host.waitFor("Camera", "suspended")
            host.closeInput()
            #expect(try host.waitForExit() == 0)
            return
        }
        let end = try sendHomeExpectingDeadlock("Camera", host)
        let reason = try #require(end.reason)
        #expect(reason.hasPrefix("held the shared resource /dev/zero open (fd "))
        let held = try #require(try Report(end)["held"] as? [[String: Any]])
        #expect(held.first?["sharedResource"] as? String == "/dev/zero")
        #expect(held.first?["path"] as? String == "/dev/zero")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    /// Whether or not the service has accepted the connection by then (a busy one may not have,
    /// and the server of the accepting case sometimes had not on a loaded machine): connected is
    /// held.
    @Test(arguments: [true, false])
    func aConnectionToADeclaredSocketAtSuspensionIsFatal(accepting: Bool) throws {
        let scratch = try Scratch()
        let server = try UnixServer(path: scratch.url.appendingPathComponent("shared.sock").path, accepting: accepting)
        let bundle = try scratch.bundle(
            "Client", behavior: ["hold": ["connect": server.path]],
            changes: ["AppHostEntitlements": ["com.apple.security.network.client": true]])
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--shared-resource", server.path])
        let end = try sendHomeExpectingDeadlock("Client", host)
        #expect(scratch.recorded("Client").contains("holding connection to \(server.path): ok"))
        #expect(try #require(end.reason).hasPrefix("held the shared resource \(server.path) open (fd "))
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }
}

/// A listening Unix socket that accepts every connection (or, not `accepting`, leaves them on
/// its queue), standing for a shared system service.
final class UnixServer: @unchecked Sendable {
    let path: String
    private let fd: Int32

    init(path: String, accepting: Bool = true) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(fd, 8) == 0, "cannot listen on \(path): errno \(errno)")
        // App users must reach it: the scratch directory and the socket are open to all.
        chmod(URL(fileURLWithPath: path).deletingLastPathComponent().path, 0o755)
        chmod(path, 0o777)
        guard accepting else { return }
        let listener = fd
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }
            }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path)
    }
}
