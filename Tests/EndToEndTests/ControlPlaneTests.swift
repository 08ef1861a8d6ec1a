import Foundation
import Testing

/// `apphost ctl` against a running `apphost launch`: one command answered as standard input
/// would answer it, events followed, one host per instance, and nobody but the host's user and
/// root in.
@Suite struct ControlPlaneTests {
    static let isRoot = getuid() == 0
    static let hello = Paths.apps.appendingPathComponent("Hello.app")

    @Test func ctlRunsOneCommandAgainstTheRunningHost() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let state = ["ctl", "--state-dir", scratch.stateDirectory.path]

        // The host prints JSON (--json), so its answer over the socket is JSON too.
        let ps = try runApphost(state + ["ps"])
        #expect(ps.status == 0)
        let rows = ps.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == 1)
        #expect(rows.first?["name"] as? String == "Hello")
        #expect(rows.first?["state"] as? String == "active")

        let missing = try runApphost(state + ["open", "Nope"])
        #expect(missing.status == 1)
        #expect(missing.output == "")
        #expect(missing.error == "apphost: ctl: no app named Nope; installed: Hello\n")
        #expect(try runApphost(state + ["open", "Helo"]).error == "apphost: ctl: no app named Helo; did you mean Hello? installed: Hello\n")
        let follower = try runApphost(state + ["events", "--app", "Helo"])
        #expect(follower.status == 1, "an unknown app is refused, not followed forever")
        #expect(follower.error == "apphost: ctl: no app named Helo; did you mean Hello? installed: Hello\n")
        let help = try runApphost(state + ["--help"])
        #expect(help.status == 0 && help.output.contains("USAGE: apphost ctl"), "\(help)")

        // A trigger answers with the line of the event it caused.
        let advanced = try runApphost(state + ["advance", "60"])
        #expect(advanced.status == 0)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(advanced.output.utf8)) as? [String: Any])
        #expect(line["event"] as? String == "advance")
        #expect((line["detail"] as? String)?.hasPrefix("scheduler clock moved 60.0 s on, to ") == true, "\(line)")

        // A command that acts: the app goes to the background and is suspended, as from stdin.
        #expect(try runApphost(state + ["home"]).status == 0)
        #expect(try runApphost(state + ["wait", "Hello", "suspended", "10"]).status == 0)
        try host.waitFor("Hello", "suspended")

        // terminate returns once the app has ended: its report is there at once.
        #expect(try runApphost(state + ["terminate", "Hello"]).status == 0)
        let report = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "hello", "--last", "--json"])
        #expect(report.status == 0)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any])
        #expect(fields["kind"] as? String == "force-quit")
    }

    @Test func ctlEventsFollowsOneAppsEventsUntilInterrupted() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let follower = Process()
        follower.executableURL = Paths.apphost
        follower.arguments = ["ctl", "--state-dir", scratch.stateDirectory.path, "events", "--json", "--app", "hello"]
        let output = Pipe()
        follower.standardOutput = output
        try follower.run()
        defer { if follower.isRunning { kill(follower.processIdentifier, SIGKILL) } }
        let lines = LineCollector(output.fileHandleForReading)
        // Until the follower is known to follow, each memory warning may go unseen.
        try waitUntil("the follower sees a memory warning") {
            _ = try? runApphost(["ctl", "--state-dir", scratch.stateDirectory.path, "memory-warning", "Hello"])
            return lines.events.contains { $0 == "didReceiveMemoryWarning" }
        }
        #expect(try runApphost(["ctl", "--state-dir", scratch.stateDirectory.path, "home"]).status == 0)
        try waitUntil("the follower sees the suspension") { lines.events.contains("suspended") }
        #expect(Array(lines.events.drop { $0 != "willResignActive" }.prefix(4)) == ["willResignActive", "didEnterBackground", "snapshot", "suspended"])
        // Only Hello's events: not the host's own notices.
        #expect(lines.apps == ["com.example.hello"])
        kill(follower.processIdentifier, SIGINT)
        follower.waitUntilExit()
        #expect(follower.terminationReason == .exit)
        #expect(follower.terminationStatus == 0)
        _ = host
    }

    @Test func aSecondHostOnTheSameInstanceIsRefusedAndQuitEndsTheFirst() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        let pid = try #require(try host.waitFor("Hello", "didBecomeActive").pid)
        let state = scratch.stateDirectory.path

        let second = try runApphost(["launch", "--state-dir", state, Self.hello.path])
        #expect(second.status == 1)
        #expect(second.error == "apphost: a host already runs on \(state) (pid \(host.process.processIdentifier)); "
            + "reach it with apphost ctl --state-dir \(state), or stop it first\n")
        // The first host and its one copy of the app run on, untouched.
        #expect(host.allEvents.filter { $0.event == "launching" }.count == 1)
        #expect(processExists(pid))

        #expect(try runApphost(["ctl", "--state-dir", state, "quit"]).status == 0)
        #expect(try host.waitForExit() == 0)
        let gone = try runApphost(["ctl", "--state-dir", state, "ps"])
        #expect(gone.status == 1)
        #expect(gone.error == "apphost: no host runs on \(state) (apphost launch starts one)\n")
        // The instance is free again.
        let next = try HostSession([Self.hello], scratch: scratch)
        try next.waitFor("Hello", "didBecomeActive")
    }

    @Test(.enabled(if: isRoot, "needs root, to connect as another user (nobody)"))
    func anotherUserCannotControlTheHost() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let control = scratch.stateDirectory.appendingPathComponent("control")

        let refused = try runApphost(["ctl", "--state-dir", scratch.stateDirectory.path, "terminate", "Hello"], user: 65534)
        #expect(refused.status == 1)
        #expect(refused.error == "apphost: cannot reach the host on \(scratch.stateDirectory.path): only the user it runs as, and root, may\n")

        // Were the directory and socket opened to everyone, the host still checks who connects.
        chmod(control.path, 0o755)
        chmod(control.appendingPathComponent("host.sock").path, 0o666)
        let checked = try runApphost(["ctl", "--state-dir", scratch.stateDirectory.path, "terminate", "Hello"], user: 65534)
        #expect(checked.status == 1)
        #expect(checked.error == "apphost: uid 65534 may not control this host; only its user (uid 0) and root may\n")
        #expect(!host.allEvents.contains { $0.event == "willTerminate" || $0.event == "terminated" })
    }

    @Test func containerNamesTheAppsContainerAndEraseWaitsForTheHostToEnd() throws {
        let scratch = try Scratch()
        let state = scratch.stateDirectory.path
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let container = "\(state)/containers/com.example.hello"
        let image = "\(state)/storage/containers/com.example.hello.ext4"
        for name in ["hello", "com.example.hello", Self.hello.path] {
            #expect(try runApphost(["container", "--state-dir", state, name]).output == container + "\n")
        }
        let busy = try runApphost(["erase", "--state-dir", state, "hello"])
        #expect(busy.status == 1)
        #expect(busy.error == "apphost: a host runs on \(state) (pid \(host.process.processIdentifier)); end it first (apphost ctl --state-dir \(state) quit)\n")
        #expect(FileManager.default.fileExists(atPath: container))

        #expect(try runApphost(["ctl", "--state-dir", state, "quit"]).status == 0)
        _ = try host.waitForExit()
        let hadImage = FileManager.default.fileExists(atPath: image)
        let erased = try runApphost(["erase", "--state-dir", state, "hello"])
        #expect(erased.status == 0)
        #expect(erased.output == "erased \(container)\n" + (hadImage ? "erased \(image)\n" : ""))
        #expect(!FileManager.default.fileExists(atPath: container))
        #expect(!FileManager.default.fileExists(atPath: image))
        let missing = try runApphost(["container", "--state-dir", state, "hello"])
        #expect(missing.status == 1)
        #expect(missing.error == "apphost: no container for hello in \(state); there are none\n")
        // Everything: the reports go too.
        #expect(try runApphost(["erase", "--state-dir", state]).status == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: state)) ?? []).isEmpty)
    }
}

/// The JSON event lines a follower prints, read as they come.
private final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var fields: [[String: Any]] = []

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var pending = Data()
            while case let chunk = handle.availableData, !chunk.isEmpty {
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    pending = pending[(newline + 1)...]
                    if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] {
                        lock.withLock { fields.append(object) }
                    }
                }
            }
        }
    }

    var events: [String] { lock.withLock { fields.compactMap { $0["event"] as? String } } }
    var apps: Set<String> { lock.withLock { Set(fields.map { $0["app"] as? String ?? "(none)" }) } }
}
