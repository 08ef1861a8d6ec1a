import Foundation
import Testing

/// An app's swift-log records reach the host as `log` events (AppHostKit bootstraps swift-log
/// before the delegate exists); the host's own diagnostics go through swift-log too.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LoggingTests {
    private let records: [[String: Any]] = [
        ["in": "didBecomeActive", "level": "info", "label": "com.example.sync", "message": "synced 3 notes", "metadata": ["account": "work", "attempt": "2"]],
        ["in": "didBecomeActive", "level": "debug", "label": "com.example.sync", "message": "cache warm"],
        ["in": "didBecomeActive", "level": "error", "label": "com.example.store", "message": "disk\u{1B}[2J full"],
        ["in": "didBecomeActive", "level": "trace", "label": "com.example.verbose", "message": "its own level", "setLevel": "trace"],
    ]

    @Test func recordsArriveAsLogEventsWithLevelAndLabelFromTheLeastLevelUp() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Logger", behavior: ["log": records])], scratch: scratch)
        try host.waitFor("Logger", "didBecomeActive")
        let logs = try (1...3).map { try host.waitFor("log #\($0)", occurrence: $0) { $0.event == "log" } }
        #expect(logs.map { $0.fields["level"] as? String } == ["info", "error", "trace"], "debug is below the default level, info")
        #expect(logs.map { $0.fields["label"] as? String } == ["com.example.sync", "com.example.store", "com.example.verbose"])
        #expect(logs[0].detail == "synced 3 notes account=work attempt=2")
        #expect(logs[0].name == "Logger" && logs[0].fields["app"] as? String == "test.logger" && logs[0].state == nil)
        #expect(logs[1].detail == "disk\u{1B}[2J full", "JSON carries the text as it is")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        #expect(host.allEvents.filter { $0.event == "log" }.count == 3)
    }

    @Test func theHumanLineAndTheLogLevelFlag() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        try Data("wait Logger active\n".utf8).write(to: script)
        let trace = scratch.url.appendingPathComponent("trace.json")
        let run = try runApphost([
            "launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, "--log-level", "debug", "--trace", trace.path,
            try scratch.bundle("Logger", behavior: ["log": records]).path,
        ])
        #expect(run.status == 0)
        let lines = run.output.split(separator: "\n").map(String.init)
        let logs = lines.filter { $0.contains("]  log  ") }
        #expect(logs.count == 4, "\(lines)")
        #expect(logs.first?.hasSuffix("]  log  info  com.example.sync  synced 3 notes account=work attempt=2") == true, "\(logs)")
        #expect(logs.contains { $0.hasSuffix("]  log  debug  com.example.sync  cache warm") })
        #expect(logs.contains { $0.hasSuffix("]  log  error  com.example.store  disk\\e[2J full") }, "escaped for the terminal: \(logs)")
        // The host's own diagnostics, through swift-log, at debug.
        let errors = run.error.split(separator: "\n").map(String.init)
        #expect(errors.contains { $0.hasPrefix("apphost: debug: Logger: spawned for a user launch, pid ") }, "\(errors)")
        // Killed once applicationWillTerminate returned, or gone by itself first (its reader
        // saw the host close the channel): either way, its end and its report.
        #expect(errors.contains {
            $0.hasPrefix("apphost: debug: Logger: ended (killed by SIGKILL), report ")
                || $0.hasPrefix("apphost: debug: Logger: ended (exited with status 0), report ")
        }, "\(errors)")

        // The trace carries a record's level and label too.
        let events = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [[String: Any]])
        let record = try #require(events.first { $0["name"] as? String == "log" && ($0["args"] as? [String: Any])?["level"] as? String == "error" })
        #expect((record["args"] as? [String: Any])?["label"] as? String == "com.example.store")

        let wrong = try runApphost(["launch", "--log-level", "loud", "Any.app"])
        #expect(wrong.status == 64)
        #expect(wrong.error.contains("unknown log level loud; one of trace, debug, info, notice, warning, error, critical"))
    }

    @Test func aFloodOfRecordsIsDeliveredWholeAndTheHostStaysResponsive() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Chatty", behavior: ["logFlood": 5000])], scratch: scratch)
        try host.waitFor("Chatty", "didBecomeActive")
        host.send("ps")
        try host.waitFor("ps of Chatty during the flood") { $0.event == "ps" && $0.name == "Chatty" }
        let last = try host.waitFor("the last record", timeout: 30) { $0.event == "log" && $0.detail == "record 4999" }
        #expect(last.fields["label"] as? String == "probe.flood")
        let numbers = host.allEvents.filter { $0.event == "log" }.compactMap { $0.detail?.split(separator: " ").last.flatMap { Int($0) } }
        #expect(numbers == Array(0..<5000), "every record, in order")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aRecordOfAnUnknownLevelBreaksTheProtocol() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Forger", behavior: ["wireAttack": "logUnknownLevel"])], scratch: scratch)
        let end = try host.waitFor("Forger", "terminated")
        #expect(end.kind == "protocol-violation")
        #expect(end.reason == "broke the control protocol: it sent a log record of level \"emergency\", which swift-log does not have")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }
}
