import Foundation
import Testing

/// Attacks of a hostile app on its control channel (fd 3) and its output pipe, each against a
/// real host and real app processes: the Probe fixture sends them (Tests/Fixtures/Probe/
/// WireAttacks.swift). The host must end the attacker with a report and stay sound: its other
/// apps keep working, its descriptors, memory and CPU stay bounded, its commands are answered.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ControlChannelTests {
    // MARK: Forged confinement and identity

    /// Hole: a second `sandboxed` frame carrying a descriptor of the app's own (an eventfd) was
    /// taken as the app's seccomp listener; the host then polled a listener that was always
    /// readable and never yielded a call, spinning on the queue that also reports refusals.
    @Test func aSecondSandboxedMessageWithADescriptorEndsTheApp() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Forger", behavior: ["wireAttack": "sandboxedWithDescriptor"]),
             try scratch.bundle("Offline", behavior: ["sandboxProbes": ["socket-inet"]])],
            scratch: scratch)
        let end = try host.waitFor("Forger", "terminated")
        #expect(end.kind == "protocol-violation")
        #expect(end.reason?.contains("sent sandboxed") == true, "reason: \(end.reason ?? "none")")
        _ = try Report(end)
        // The host does not spin: less than half a second of CPU over a second of idleness.
        let pid = host.process.processIdentifier
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        let before = try #require(cpuTicks(pid))
        Thread.sleep(forTimeInterval: 1)  // the measured interval itself
        let after = try #require(cpuTicks(pid))
        #expect(after - before < ticksPerSecond / 2, "the host used \(after - before) ticks (of \(ticksPerSecond) per second) while idle")
        // Refusals of another app go on being reported.
        host.send("open Offline")
        try host.waitFor("Offline", "didBecomeActive")
        #expect(scratch.recorded("Offline").filter { $0.hasPrefix("probe ") } == ["probe socket-inet: EPERM"])
        if SyscallFilterTests.hasNotification {
            let violation = try host.waitFor("Offline violation") { $0.name == "Offline" && $0.event == "violation" }
            #expect(violation.detail == "socket(AF_INET) refused (EPERM)")
        }
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }

    /// Holes: (hello) a `hello` sent after launch, naming the host's own pid, was accepted
    /// silently; (sandboxedAsRoot) a second `sandboxed` frame without a descriptor claiming
    /// uid 0 was published as how the app is confined ("uid 0"). The compact form of the
    /// callback's acknowledgement (CompactCoding.swift) is held to the protocol as JSON is: an
    /// ack for a callback that is not running (compactAckOutOfTurn), and a compact frame cut
    /// short (compactAckTruncated); so is an acknowledgement that claims to run the launch's
    /// configured didBecomeActive after another callback than didFinishLaunching
    /// (ackThenNextOutOfTurn).
    @Test(arguments: [
        ("hello", "sent hello"), ("sandboxedAsRoot", "sent sandboxed"),
        ("compactAckOutOfTurn", "it acknowledged callback 999999, which was not running"),
        ("compactAckTruncated", "it sent a frame that is not a message (5 bytes"),
        ("ackThenNextOutOfTurn", "it ran a callback after callback 1 that its configuration did not carry"),
    ])
    func aForgedMessageEndsTheAppAndChangesNothing(attack: String, reason: String) throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Liar", behavior: ["wireAttack": attack])], scratch: scratch)
        let end = try host.waitFor("Liar", "terminated")
        #expect(end.kind == "protocol-violation")
        #expect(end.reason?.contains(reason) == true, "reason: \(end.reason ?? "none")")
        _ = try Report(end)
        // Only the genuine `sandboxed` event, published at launch, with the genuine uid.
        let sandboxed = host.allEvents.filter { $0.name == "Liar" && $0.event == "sandboxed" }
        #expect(sandboxed.count == 1, "sandboxed events: \(sandboxed)")
        #expect(sandboxed.first?.detail?.hasSuffix("uid \(try genuineUID("Liar", scratch: scratch))") == true,
                "detail: \(sandboxed.first?.detail ?? "none")")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }

    /// The uid the app really runs as: its own user from the host's allocations on a root host
    /// (apps run as per-app users from 2000000000 on), else the user running the tests.
    private func genuineUID(_ name: String, scratch: Scratch) throws -> UInt32 {
        guard getuid() == 0 else { return getuid() }
        let data = try Data(contentsOf: scratch.stateDirectory.appendingPathComponent("app-users.json"))
        let table = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let uid = try #require((table["apps"] as? [String: Any])?["test.\(name.lowercased())"] as? Int)
        #expect(uid >= 2_000_000_000)
        return UInt32(uid)
    }

    // MARK: Descriptors

    /// Hole: descriptors attached (SCM_RIGHTS) to the bytes of ordinary frames were all kept by
    /// the host, waiting for a `sandboxed` frame that never came, until it ran out of
    /// descriptors and could no longer launch anything.
    @Test func descriptorsOnEveryByteEndTheAppAndAreNotKept() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Steady"), try scratch.bundle("Smuggler", behavior: ["wireAttack": "descriptorPerByte"]),
             try scratch.bundle("Later")],
            scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        let pid = host.process.processIdentifier
        let baseline = try #require(openDescriptors(pid))
        host.send("open Smuggler")
        let end = try host.waitFor("Smuggler", "terminated", timeout: 20)
        #expect(end.kind == "protocol-violation")
        #expect(end.reason?.contains("descriptor") == true, "reason: \(end.reason ?? "none")")
        _ = try Report(end)
        // The app's end closes what it sent (the host's own sources close asynchronously; the
        // next launch's standby process, made or not yet when the baseline was taken, holds 5).
        _ = becomesTrue(within: 15) { (openDescriptors(pid) ?? .max) <= baseline + 10 }
        let count = try #require(openDescriptors(pid))
        #expect(count <= baseline + 10, "the host holds \(count) descriptors, \(baseline) before the app was opened")
        host.send("open Later")
        try host.waitFor("Later", "didBecomeActive")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }

    // MARK: Output

    /// Hole: the host read an app's output until the pipe was empty, which a flooding app never
    /// lets happen, so it answered nothing else; and it kept a line without a newline whole, so
    /// an app that never printed one grew the host's memory without bound.
    @Test(arguments: ["lines", "noNewline"])
    func anOutputFloodLeavesTheHostResponsive(flood: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Flooder", behavior: ["flood": flood]), try scratch.bundle("Steady")],
            scratch: scratch, keepStandardErrorKiB: 64)
        try host.waitFor("Flooder", "didBecomeActive")
        let floodStarted = Date()
        let pid = host.process.processIdentifier
        // Each command is answered while the flood goes on (a host that read the pipe until it
        // was empty answered none); within the wait's 5 s, not a wall-clock window the test
        // measures, which a loaded machine stretches.
        for round in 1...5 {
            host.send("ps")
            try host.waitFor("ps #\(round) of Flooder", occurrence: round, timeout: 5) { $0.event == "ps" && $0.name == "Flooder" }
        }
        if flood == "noNewline" {
            // Measured while the app still floods (opening another app would suspend it).
            Thread.sleep(until: floodStarted.addingTimeInterval(3))  // the measured interval: 3 s of flood
            let resident = try #require(residentBytes(pid))
            #expect(resident < 150 << 20, "the host's VmRSS is \(resident >> 20) MiB after 3 s of flood")
        }
        host.send("open Steady")
        try host.waitFor("Steady", "didBecomeActive")
        host.closeInput()
        #expect(try host.waitForExit(timeout: 10) == 0)
    }

    /// Hole: a line of any length was kept whole until its newline came. The host cuts it into
    /// pieces of at most 16384 bytes, each cut piece marked as such; nothing is lost.
    @Test func aLongLineIsForwardedInMarkedPieces() throws {
        let scratch = try Scratch()
        let length = 40_000  // with its newline
        let host = try HostSession(
            [try scratch.bundle("Talker", behavior: ["longLine": length])], scratch: scratch, keepStandardErrorKiB: 256)
        let pid = try #require(try host.waitFor("Talker", "didBecomeActive").pid)
        let prefix = "Talker[\(pid)]: "
        try host.waitForStandardError(containing: prefix + "long line done")
        let marker = " [line cut at 16384 bytes]"
        let pieces = host.standardError.split(separator: "\n").filter { $0.hasPrefix(prefix) && !$0.hasSuffix("long line done") }
            .map { String($0.dropFirst(prefix.count)) }
        let payloads = pieces.map { $0.hasSuffix(marker) ? String($0.dropLast(marker.count)) : $0 }
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let line = String((0..<(length - 1)).map { letters[$0 % letters.count] })
        #expect(payloads.joined() == line, "pieces of \(payloads.map(\.utf8.count)) bytes")
        #expect(payloads.allSatisfy { $0.utf8.count <= 16384 }, "pieces of \(payloads.map(\.utf8.count)) bytes")
        #expect(pieces.count >= 3)
        #expect(pieces.dropLast().allSatisfy { $0.hasSuffix(marker) }, "every cut piece ends with the marker")
        #expect(pieces.last?.hasSuffix(marker) == false, "the line's end is not a cut")
        host.closeInput()
        #expect(try host.waitForExit(timeout: 10) == 0)
    }
}

// MARK: The host process, from /proc

/// How many descriptors a process holds: the entries of /proc/PID/fd.
private func openDescriptors(_ pid: Int32) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
}

/// A process's resident memory in bytes: VmRSS of /proc/PID/status.
private func residentBytes(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kibibytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return nil }
    return kibibytes * 1024
}

/// Hole (issue 12, item 8): raw control characters from an app's output and from its warning
/// text reached the terminal of the person running the host: a carriage return and an escape
/// sequence can rewrite what the host said. They are shown escaped; tabs are kept.
@Suite(.timeLimit(.minutes(1)))
struct TerminalEscapeTests {
    @Test func controlCharactersFromAnAppReachTheTerminalEscaped() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Escaper", behavior: ["terminalEscapes": true])
        let script = scratch.url.appendingPathComponent("script.apphost")
        try "wait Escaper active\nquit\n".write(to: script, atomically: true, encoding: .utf8)
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, bundle.path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let everything = result.output + result.error
        #expect(!everything.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x0D },
                "no raw escape, bell or carriage return reaches the terminal")
        #expect(result.error.contains(#"]: before\r\e[2Kafter\x07"# + "\tend"), "stderr: \(result.error)")
        #expect(result.output.contains(#"title \e]0;pwned\x07 done"#), "stdout: \(result.output)")
    }
}

/// Nothing blocks the loop (docs/commands.md, "Running apps"): standard output leaves through a bounded
/// queue, so a reader that stops reading (a paused terminal, a pipe nobody drains) costs it lines,
/// never the watchdogs' time.
@Suite(.timeLimit(.minutes(1)))
struct StalledOutputTests {
    /// Regression: the host wrote each event to standard output on its loop; with the pipe full,
    /// the loop waited in write(2) and no watchdog, command or launch went on.
    @Test func aReaderThatStopsReadingStallsNoWatchdog() throws {
        let scratch = try Scratch()
        let flooder = try scratch.bundle("Flooder", behavior: ["logFlood": 4000])
        let stuck = try scratch.bundle("Stuck", behavior: ["blockIn": "didFinishLaunching", "blockSeconds": 3600.0])
        let process = Process()
        process.executableURL = Paths.apphost
        process.arguments = ["launch", "--json", "--state-dir", scratch.stateDirectory.path, "--launch-timeout", "1", flooder.path, stuck.path]
        let input = Pipe(), output = Pipe()
        // One page: the flood (4,000 lines, some 600 KB) fills it many times over. (A full pipe
        // of the default 64 KiB holds less than 64 KiB of lines: each write takes its own room.)
        let reader = output.fileHandleForReading.fileDescriptor
        try #require(fcntl(reader, 1031 /* F_SETPIPE_SZ */, 4096) >= 4096, "cannot size the pipe: \(String(cString: strerror(errno)))")
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // The pipe fills and nobody reads it.
        var pending: Int32 = 0
        _ = becomesTrue(within: 20) { ioctl(reader, UInt(FIONREAD), &pending) == 0 && pending >= 2048 }
        try #require(pending >= 2048, "the host's events began filling the pipe (\(pending) bytes waiting)")
        input.fileHandleForWriting.write(Data("open Stuck\n".utf8))
        // The launch watchdog ends Stuck and writes its report, whatever the pipe.
        let reports = scratch.stateDirectory.appendingPathComponent("reports").path
        var report: String?
        _ = becomesTrue(within: 20) {
            report = ((try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []).first { $0.hasPrefix("Stuck-") && $0.hasSuffix(".json") }
            return report != nil
        }
        let name = try #require(report, "no report for Stuck while standard output was not read")
        let text = try String(contentsOfFile: reports + "/" + name, encoding: .utf8)
        #expect(text.contains("0x8badf00d"))
        // Read at last, the output holds every event, Stuck's end among them.
        try input.fileHandleForWriting.close()
        let all = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(all.contains("\"event\":\"terminated\"") && all.contains("\"name\":\"Stuck\""))
        #expect(!all.contains("of output dropped"), "no line lost below the queue's limit")
    }
}
