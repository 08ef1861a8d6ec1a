import Foundation
import Testing

/// Where apphost must be no kinder than iOS (issue: an iOS engineer's probes): the scheduler's
/// minimum interval between runs of one task.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct FidelityTests {
    private func bundle(_ scratch: Scratch, _ name: String, behavior: [String: Any]) throws -> URL {
        try scratch.bundle(
            name, behavior: behavior,
            changes: ["UIBackgroundModes": ["fetch", "processing"], "BGTaskSchedulerPermittedIdentifiers": ["test.clean"]])
    }

    /// Apple's own pattern: resubmit the request in applicationDidEnterBackground and in the
    /// task. It ran four times in 1.5 s; iOS runs it rarely, and so does the scheduler now.
    @Test func aResubmittedProcessingTaskRunsOncePerIntervalExceptByRunTask() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = [
            "registerTasks": ["test.clean"], "submit": [["identifier": "test.clean", "kind": "processing"]],
            "submitIn": "didEnterBackground", "submitInTask": true,
        ]
        let host = try HostSession([try bundle(scratch, "Cleaner", behavior: behavior)], scratch: scratch)
        try host.waitFor("Cleaner", "didBecomeActive")
        host.send("home")
        try host.waitFor("Cleaner", "launchTask")
        try host.waitFor("Cleaner", "suspended")
        host.send("tasks")
        let pending = try host.waitFor("the resubmitted request") { $0.event == "task" }
        let waiting = try #require(pending.fields["waitingFor"] as? String)
        #expect(waiting.hasPrefix("its minimum interval between runs, ") && waiting.contains(" (3600.0 s after test.clean last began, at "), "\(waiting)")
        #expect(host.allEvents.filter { $0.event == "launchTask" }.count == 1)

        host.send("advance 3590")
        #expect(try host.waitFor("advance") { $0.event == "advance" }.detail?.hasSuffix(
            "nothing became due; test.clean waits for the minimum interval between runs (tasks says until when)") == true)
        host.send("advance 20")
        try host.waitFor("Cleaner", "launchTask", occurrence: 2)
        try host.waitFor("Cleaner", "suspended", occurrence: 2)

        // run-task is not held to the interval (what iOS allows only from a debugger).
        host.send("run-task Cleaner test.clean")
        try host.waitFor("Cleaner", "launchTask", occurrence: 3)
        try host.waitFor("Cleaner", "suspended", occurrence: 3)
        #expect(host.allEvents.filter { $0.event == "launchTask" }.count == 3)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// `switcher`: the foreground app resigns active; `open` makes it active again, `home` sends it
    /// to the background.
    @Test func theAppSwitcherMakesTheForegroundAppInactiveUntilOpenOrHome() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Switched")], scratch: scratch)
        try host.waitFor("Switched", "didBecomeActive")
        host.send("switcher")
        try host.waitFor("Switched", "willResignActive")
        #expect(host.allEvents.filter { $0.name == "Switched" }.map(\.event).suffix(2) == ["switcher", "willResignActive"])
        host.send("open Switched")
        try host.waitFor("Switched", "didBecomeActive", occurrence: 2)
        host.send("switcher")
        host.send("home")
        try host.waitFor("Switched", "suspended")
        #expect(scratch.callbacks("Switched").suffix(4) == [
            "willResignActive active", "didBecomeActive active", "willResignActive active", "didEnterBackground background",
        ])
        host.send("switcher")
        try host.waitForStandardError(containing: "apphost: stdin: no app is in the foreground")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Background time of 2 s: the expiration handlers run at 1 s, the grace ends at 3 s.
    private static let shortBackground = ["--background-time", "2", "--expiration-warning", "1", "--expiration-grace", "1"]

    @Test func aSlowExpirationHandlerIsEndedByTheWatchdog() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Slow", behavior: ["beginTaskIn": "didEnterBackground", "expirationBlocks": 3.0])], scratch: scratch,
            arguments: Self.shortBackground)
        try host.waitFor("Slow", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Slow", "terminated")
        #expect(end.code == "0x8badf00d")
        #expect(end.reason == "the expiration handler of background task #1 \"probe-0\" did not return within 1.0 s; expiration handlers must finish in about a second")
        #expect(scratch.recorded("Slow").contains { $0.hasPrefix("expiration background main=true") })
        let report = try Report(end)
        let frames = (report["backtrace"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
        #expect(frames.contains { ($0["symbol"] as? String)?.contains("AppDelegate") == true }, "the main thread, in the handler")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func aBlockedMainThreadIsWhyTheExpirationHandlerDidNotRun() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Stuck", behavior: ["beginTaskIn": "didEnterBackground", "blockMainAfter": "didEnterBackground"])],
            scratch: scratch, arguments: Self.shortBackground)
        try host.waitFor("Stuck", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Stuck", "terminated")
        #expect(end.code == "0x2182bad2")
        let reason = try #require(end.reason)
        #expect(reason.hasPrefix("background task #1 \"probe-0\" still open 1.0 s after its background time (2.0 s) ran out; "
            + "its expiration handler could not run: the main thread was blocked, not answering for "), "\(reason)")
        #expect(reason.hasSuffix(" s (since applicationDidEnterBackground(_:) returned)") || reason.hasSuffix(" s (since the snapshot was taken)"), "\(reason)")
        #expect(!scratch.recorded("Stuck").contains { $0.hasPrefix("expiration ") })
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    /// iOS code reads its own Info.plist through Bundle.main.
    @Test func bundleMainIsTheAppsBundle() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Bundled")], scratch: scratch)
        try host.waitFor("Bundled", "didBecomeActive")
        #expect(scratch.recorded("Bundled").contains("main bundle test.bundled Bundled Bundled.app"), "\(scratch.recorded("Bundled"))")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
