import Foundation
import Testing

/// What a run leaves for a person and for CI: the exit status, `apphost reports` (listing,
/// summary, JSON), the timeline of `reports --timeline` and the Trace Event file of `--trace`.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct OutcomeTests {
    /// One app terminated as asked, then one that crashes: a run with one of each end.
    private func runWithACrash(_ scratch: Scratch, trace: URL) throws -> (status: Int32, output: String, error: String) {
        let script = scratch.url.appendingPathComponent("script")
        try Data("wait Listed active\nsleep 0.5\nterminate Listed\nwait Listed terminated\nopen Crasher\nwait Crasher terminated\n".utf8).write(to: script)
        return try runApphost([
            "launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, "--trace", trace.path,
            try scratch.bundle("Listed").path,
            try scratch.bundle("Crasher", behavior: ["crashIn": "didBecomeActive", "crash": "trap"]).path,
        ])
    }

    @Test func aCrashMakesTheExitStatusTwoAndSaysWhy() throws {
        let scratch = try Scratch()
        let run = try runWithACrash(scratch, trace: scratch.url.appendingPathComponent("trace.json"))
        #expect(run.status == HostExit.crash)
        let last = try #require(run.error.split(separator: "\n").last.map(String.init))
        #expect(last.hasPrefix("apphost: exit status 2: an app crashed (SIGNAL) or exited by itself (EXIT); Crasher was ended: SIGNAL 4, crashed (SIGILL) in applicationDidBecomeActive(_:) (report: \(scratch.stateDirectory.path)/reports/Crasher-"))
    }

    @Test func aScriptThatFailsAfterACrashStillExitsWithTheCrash() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        try Data("wait Crasher terminated\nwait Crasher active 0.2\n".utf8).write(to: script)
        let run = try runApphost([
            "launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path,
            try scratch.bundle("Crasher", behavior: ["crashIn": "didBecomeActive", "crash": "exit3"]).path,
        ])
        #expect(run.status == HostExit.crash)
        #expect(run.error.contains("apphost: exit status 2: an app crashed (SIGNAL) or exited by itself (EXIT); Crasher was ended: EXIT 3, exited with status 3"))
    }

    @Test func reportsListsSummarizesAndPrintsJSON() throws {
        let scratch = try Scratch()
        _ = try runWithACrash(scratch, trace: scratch.url.appendingPathComponent("trace.json"))
        let state = scratch.stateDirectory.path

        let all = try runApphost(["reports", "--state-dir", state])
        #expect(all.status == 0)
        let lines = all.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.contains("  Listed  ") == true)
        #expect(lines.first?.contains("USER -    user-terminated  Listed-") == true, "\(lines)")
        #expect(lines.first?.hasSuffix(".json   terminated by the user; applicationWillTerminate(_:) returned") == true, "file names differ by a letter: \(lines)")
        #expect(lines.last?.contains("SIGNAL 4  crash            Crasher-") == true, "\(lines)")

        let listed = try runApphost(["reports", "--state-dir", state, "listed"])
        #expect(listed.output.split(separator: "\n").count == 1)
        #expect(try runApphost(["reports", "--state-dir", state, "Nobody"]).output == "no reports of Nobody in \(state)/reports\n")

        let summary = try runApphost(["reports", "--state-dir", state, "Crasher", "--last"])
        #expect(summary.status == 0)
        let shown = summary.output.split(separator: "\n").map(String.init)
        #expect(shown.first?.hasPrefix("Crasher (test.crasher), pid ") == true)
        #expect(shown.contains("why         SIGNAL 4 (crash): crashed (SIGILL) in applicationDidBecomeActive(_:)"))
        #expect(shown.contains("process     killed by SIGILL; a crash: the app ended without the host deciding it"))
        #expect(shown.contains { $0.hasPrefix("fatal error ") && $0.hasSuffix("Fatal error: Probe crashes on purpose") }, "\(shown)")
        #expect(shown.contains { $0.hasPrefix("backtrace   the crashed thread: thread ") && $0.hasSuffix(" (main), SIGILL") }, "\(shown)")
        #expect(shown.contains { $0.hasPrefix("  0  ") })
        #expect(shown.contains { $0.hasPrefix("usage       CPU ") })
        #expect(shown.contains("last events"))
        #expect(shown.contains { $0.hasSuffix("didFinishLaunching → inactive") })
        #expect(shown.contains { $0.hasPrefix("report      \(state)/reports/Crasher-") })

        let json = try runApphost(["reports", "--state-dir", state, "test.crasher", "--last", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(report["kind"] as? String == "crash")
        #expect(report["code"] as? String == "4")
        let jsonLines = try runApphost(["reports", "--state-dir", state, "--json"]).output.split(separator: "\n")
        #expect(jsonLines.count == 2)
        let kinds = try jsonLines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])["kind"] as? String }
        #expect(kinds == ["user-terminated", "crash"])
    }

    @Test func theTimelineDrawsALanePerAppWithItsEnd() throws {
        let scratch = try Scratch()
        _ = try runWithACrash(scratch, trace: scratch.url.appendingPathComponent("trace.json"))
        let result = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "--timeline", "--width", "60"])
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let listed = try #require(lines.first { $0.hasPrefix("Listed ") })
        let crasher = try #require(lines.first { $0.hasPrefix("Crasher ") })
        let listedLane = listed.dropFirst(9).trimmingCharacters(in: .whitespaces)
        let crasherLane = crasher.dropFirst(9).trimmingCharacters(in: .whitespaces)
        #expect(listedLane.contains("A") && listedLane.hasSuffix("|"), "\(listed)")
        #expect(crasherLane.hasSuffix("x"), "\(crasher)")
        #expect(lines.contains { $0.hasPrefix("Crasher at +") && $0.hasSuffix(": SIGNAL 4 (crash), crashed (SIGILL) in applicationDidBecomeActive(_:)") })
        #expect(lines.contains("L launching  A active  i inactive  b background  s suspended  x ended by the system  | ended as asked"))

        let one = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "--timeline", "crasher"])
        #expect(!one.output.contains("Listed "))
        let narrow = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "--timeline", "--width", "5"])
        #expect(narrow.status == 64 && narrow.error.contains("--width takes 10 to 1000 columns; not 5"), "\(narrow)")
        let mixed = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "--width", "50"])
        #expect(mixed.status == 64 && mixed.error.contains("--run and --width go with --timeline"), "\(mixed)")
        let missing = try runApphost(["reports", "--state-dir", scratch.stateDirectory.path, "--timeline", "--run", "2"])
        #expect(missing.status == 1)
        #expect(missing.error == "apphost: --run takes 1 to 1: 1 run is kept\n")
    }

    @Test func theTraceIsTraceEventJSONWithATrackPerApp() throws {
        let scratch = try Scratch()
        let file = scratch.url.appendingPathComponent("trace.json")
        _ = try runWithACrash(scratch, trace: file)
        let events = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [[String: Any]])
        func process(_ label: String) -> Int? {
            events.first { $0["name"] as? String == "process_name" && ($0["args"] as? [String: Any])?["name"] as? String == label }?["pid"] as? Int
        }
        let listed = try #require(process("Listed (test.listed)"))
        let crasher = try #require(process("Crasher (test.crasher)"))
        #expect(process("apphost") == 1)
        let states = events.filter { $0["pid"] as? Int == listed && $0["cat"] as? String == "state" }
        #expect(states.map { $0["name"] as? String } == ["launching", "inactive", "active", "inactive"], "terminated through the app switcher")
        #expect(states.allSatisfy { $0["ph"] as? String == "X" })
        // Spans in microseconds, each lasting until the next begins; active through the script's 0.5 s.
        let spans = states.compactMap { state in (state["ts"] as? Int).flatMap { ts in (state["dur"] as? Int).map { (ts: ts, dur: $0) } } }
        try #require(spans.count == 4, "\(states)")
        #expect(zip(spans, spans.dropFirst()).allSatisfy { $0.ts + $0.dur == $1.ts }, "\(spans)")
        #expect(spans[2].dur >= 500_000, "\(spans)")
        let callback = try #require(events.first { $0["pid"] as? Int == listed && $0["name"] as? String == "didBecomeActive" })
        #expect(callback["ph"] as? String == "X" && callback["tid"] as? Int == 2 && (callback["dur"] as? Int ?? 0) > 0)
        let end = try #require(events.first { $0["pid"] as? Int == crasher && $0["name"] as? String == "terminated" })
        #expect(end["ph"] as? String == "i")
        let args = try #require(end["args"] as? [String: Any])
        #expect(args["namespace"] as? String == "SIGNAL" && args["code"] as? String == "4" && args["kind"] as? String == "crash")
        let tracks = events.filter { $0["name"] as? String == "thread_name" && $0["pid"] as? Int == crasher }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(tracks == ["state", "callbacks", "background tasks", "events"])
    }

    @Test func anUnwritableTraceIsBadInput() throws {
        let scratch = try Scratch()
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--trace", "/nonexistent/trace.json", try scratch.bundle("Listed").path])
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("apphost: cannot write the trace /nonexistent/trace.json: "))
    }

    @Test func aReaderThatGoesAwayEndsTheHostCleanly() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        try Data("wait Listed active\nsleep 20\n".utf8).write(to: script)
        // head reads the first line and leaves: the host's next write finds no reader.
        let pipeline = "'\(Paths.apphost.path)' launch --state-dir '\(scratch.stateDirectory.path)' --script '\(script.path)' "
            + "'\(try scratch.bundle("Listed").path)' | head -n 1 >/dev/null; echo \"${PIPESTATUS[0]}\""
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", pipeline]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(status == "0\n", "not killed by SIGPIPE (141)")
        let reports = try FileManager.default.contentsOfDirectory(atPath: scratch.stateDirectory.appendingPathComponent("reports").path)
        #expect(reports.count == 1)
        let report = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: scratch.stateDirectory.appendingPathComponent("reports/\(reports[0])"))) as? [String: Any])
        #expect(report["kind"] as? String == "host-shutdown")
        // Ended wherever its launch had got to when the second line found no reader.
        #expect((report["reason"] as? String)?.hasPrefix("the host shut down") == true)
    }
}
