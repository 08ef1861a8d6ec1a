import Foundation
import Testing

/// Crash and watchdog reports carry where the app was: the Swift runtime's fatal-error message
/// and the crashed thread's backtrace, or the main thread's at a watchdog kill, named down to the
/// app's own functions (README, "Crash and watchdog reports").
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BacktraceTests {
    /// The frames of a report's backtrace.
    private func frames(_ report: Report, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        let backtrace = try #require(report["backtrace"] as? [String: Any], "the report has a backtrace", sourceLocation: sourceLocation)
        return try #require(backtrace["frames"] as? [[String: Any]], sourceLocation: sourceLocation)
    }

    /// The first frame whose symbol starts with `symbol`.
    private func frame(_ frames: [[String: Any]], _ symbol: String) -> [String: Any]? {
        frames.first { ($0["symbol"] as? String)?.hasPrefix(symbol) == true }
    }

    /// Launches `behavior`'s Probe as Crasher beside a steady app, opens it, returns its end.
    private func crash(_ behavior: [String: Any]) throws -> (end: Event, report: Report) {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Steady"), try scratch.bundle("Crasher", behavior: ["crashIn": "didBecomeActive"].merging(behavior) { $1 })],
            scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        host.send("open Crasher")
        let end = try host.waitFor("Crasher", "terminated")
        let report = try Report(end)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.crash)
        return (end, report)
    }

    @Test func aFatalErrorReportHasTheMessageAndTheCrashedThreadsBacktrace() throws {
        let (end, report) = try crash(["crash": "trap"])
        #expect(end.kind == "crash")
        #expect(end.code == "4")
        let message = try #require(report["fatalError"] as? String)
        #expect(message.hasSuffix("Fatal error: Probe crashes on purpose"))
        #expect(message.contains("AppDelegate.swift:"), "the runtime's file:line: \(message)")
        let backtrace = try #require(report["backtrace"] as? [String: Any])
        #expect(backtrace["role"] as? String == "crashed")
        #expect(backtrace["signal"] as? String == "SIGILL")
        #expect(backtrace["capturedBy"] as? String == "app-process")
        #expect((backtrace["thread"] as? [String: Any])?["isMain"] as? Bool == true)
        let frames = try frames(report)
        let crashing = try #require(frame(frames, "ProbeFixture.AppDelegate.crash()"), "frames: \(frames.map { $0["line"] ?? "" })")
        #expect(crashing["isApp"] as? Bool == true)
        #expect(crashing["image"] as? String == "libProbeFixture.so")
        #expect(frame(frames, "ProbeFixture.AppDelegate.applicationDidBecomeActive(") != nil)
        // The runtime's own frames are there, and are not the app's.
        let system = try #require(frames.first)
        #expect(system["isApp"] as? Bool == false)
        #expect(system["image"] as? String == "libswiftCore.so")
        // The one-line event says it too.
        #expect(end.fields["fatalError"] as? String == message)
        #expect((end.fields["appFrame"] as? String)?.hasPrefix("ProbeFixture.AppDelegate.crash() + ") == true)
    }

    @Test func aNilUnwrappedReportsTheRuntimesMessageAndTheFunction() throws {
        let (_, report) = try crash(["crash": "nil"])
        let message = try #require(report["fatalError"] as? String)
        #expect(message.hasSuffix("Fatal error: Unexpectedly found nil while unwrapping an Optional value"))
        let frames = try frames(report)
        #expect(frame(frames, "ProbeFixture.AppDelegate.unwrapNothing()")?["isApp"] as? Bool == true, "frames: \(frames.map { $0["line"] ?? "" })")
    }

    @Test func aSegmentationFaultHasABacktraceFromTheFaultingInstruction() throws {
        let (end, report) = try crash(["crash": "fault", "faultAddress": 16])
        #expect(end.code == "11")
        #expect(report["fatalError"] == nil, "a fault prints no message")
        let backtrace = try #require(report["backtrace"] as? [String: Any])
        #expect(backtrace["signal"] as? String == "SIGSEGV")
        #expect(backtrace["faultAddress"] as? String == "0x10")
        let frames = try frames(report)
        let top = try #require(frames.first)
        #expect((top["symbol"] as? String)?.hasPrefix("ProbeFixture.AppDelegate.writeThroughABadPointer()") == true, "frames: \(frames.map { $0["line"] ?? "" })")
        #expect(top["isApp"] as? Bool == true)
    }

    @Test func aRaisedSignalIsUnwoundThroughTheCLibrary() throws {
        // raise() runs in glibc, which keeps no frame pointers: the unwind tables carry the
        // backtrace through it to the app's caller.
        let (_, report) = try crash(["crash": "segv"])
        let frames = try frames(report)
        #expect(frame(frames, "ProbeFixture.AppDelegate.crash()") != nil, "frames: \(frames.map { $0["line"] ?? "" })")
        #expect((report["backtrace"] as? [String: Any])?["unwinder"] as? String == "unwind-tables")
    }

    @Test(arguments: [
        ("spinIn", "ProbeFixture.AppDelegate.spinForever()"),
        ("blockIn", "ProbeFixture.AppDelegate.step("),
    ])
    func aWatchdogReportHasTheMainThreadsBacktraceAtTheKill(hang: String, function: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Stuck", behavior: [hang: "willResignActive"])], scratch: scratch,
            arguments: ["--callback-timeout", "0.5"])
        try host.waitFor("Stuck", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Stuck", "terminated")
        #expect(end.kind == "watchdog")
        #expect(end.code == "0x8badf00d")
        let report = try Report(end)
        let backtrace = try #require(report["backtrace"] as? [String: Any], "unavailable: \(report["backtraceUnavailable"] ?? "-")")
        #expect(backtrace["role"] as? String == "main-at-kill")
        #expect((backtrace["thread"] as? [String: Any])?["isMain"] as? Bool == true)
        let frames = try frames(report)
        #expect(frame(frames, function)?["isApp"] as? Bool == true, "frames: \(frames.map { $0["line"] ?? "" })")
        #expect(frame(frames, "ProbeFixture.AppDelegate.applicationWillResignActive(") != nil)
        #expect(report["fatalError"] == nil)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func aMainThreadThatCannotAnswerIsKilledOnTimeAndTheReportSaysWhy() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Deaf", behavior: ["maskSampleSignalIn": "willResignActive", "spinIn": "willResignActive"])],
            scratch: scratch, arguments: ["--callback-timeout", "0.5"])
        try host.waitFor("Deaf", "didBecomeActive")
        host.send("home")
        let resigned = try host.waitFor("Deaf", "terminated")
        #expect(resigned.kind == "watchdog")
        let report = try Report(resigned)
        #expect(report["backtrace"] == nil)
        #expect(report["backtraceUnavailable"] as? String
            == "the main thread did not answer within 0.1 s (it blocks the sample signal, or app code replaced apphost's handler)")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func anAppFloodingItsDiagnosticsSocketIsNoLongerHeardAndTheHostCarriesOn() throws {
        let (end, report) = try crash(["crash": "fault", "floodDiagnosticsIn": "didFinishLaunching", "diagnosticsCount": 40])
        #expect(end.kind == "crash")
        #expect(end.code == "11")
        #expect(report["backtrace"] == nil)
        #expect(report["backtraceUnavailable"] as? String == "the app process had sent more than 16 diagnostics records; no more were read")
    }
}
