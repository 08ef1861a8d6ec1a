import Foundation
import Testing

/// Background time: one budget per app, expiration handlers on the main queue at the warning
/// time, suspension once every task ends, 0x2182bad2 after the grace period, 0xbada5e47 past
/// 1000 open tasks.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BackgroundTimeTests {
    /// 1.5 s of background time; handlers at 1.0 s; killed at 2.0 s if tasks remain.
    static let shortBudget = ["--background-time", "1.5", "--expiration-warning", "0.5", "--expiration-grace", "0.5"]

    @Test func anAppThatEndsItsTaskOnExpirationIsSuspended() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Saver", behavior: ["beginTaskIn": "didEnterBackground", "endTaskOnExpiration": true])],
            scratch: scratch, arguments: Self.shortBudget)
        try host.waitFor("Saver", "didBecomeActive")
        host.send("home")
        let entered = try host.waitFor("Saver", "didEnterBackground")
        #expect(entered.state == "background")
        let expiration = try host.waitFor("Saver", "expiration")
        let suspended = try host.waitFor("Saver", "suspended")
        #expect(suspended.time! >= expiration.time!)
        let warnedAfter = expiration.time!.timeIntervalSince(entered.callbackStarted)
        #expect(warnedAfter >= 0.95 && warnedAfter < 1.5, "handlers run 0.5 s before the 1.5 s budget ends: \(warnedAfter)")
        let handler = try #require(scratch.recorded("Saver").first { $0.hasPrefix("expiration") })
        #expect(handler == "expiration background main=true remaining=0.5", "on the main queue, in the background, with 0.5 s left")
        #expect(!host.allEvents.contains { $0.event == "terminated" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func anAppThatKeepsItsTaskIsKilledWith2182bad2AfterTheGrace() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Hog", behavior: ["beginTaskIn": "didEnterBackground"])],
            scratch: scratch, arguments: Self.shortBudget)
        try host.waitFor("Hog", "didBecomeActive")
        host.send("home")
        let entered = try host.waitFor("Hog", "didEnterBackground")
        try host.waitFor("Hog", "expiration")
        let end = try host.waitFor("Hog", "terminated")
        #expect(end.code == "0x2182bad2")
        #expect(end.namespace == "RUNNINGBOARD")
        #expect(end.reason == "background task #1 \"probe-0\" still open 0.5 s after its background time (1.5 s) ran out")
        let elapsed = end.time!.timeIntervalSince(entered.callbackStarted)
        #expect(elapsed >= 1.95 && elapsed < 3.0, "killed at budget + grace: \(elapsed) s")
        #expect(scratch.recorded("Hog").contains { $0.hasPrefix("expiration background main=true") })
        let report = try Report(end)
        #expect((report["held"] as? [[String: String]])?.first?["backgroundTask"] == "#1 probe-0")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test func anAppThatEndsItsTaskEarlyIsSuspendedAtOnce() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Quick", behavior: ["beginTaskIn": "didEnterBackground", "endTaskAfter": 0.2])],
            scratch: scratch, arguments: Self.shortBudget)
        try host.waitFor("Quick", "didBecomeActive")
        host.send("home")
        let entered = try host.waitFor("Quick", "didEnterBackground")
        let ended = try host.waitFor("Quick", "backgroundTaskEnded")
        let suspended = try host.waitFor("Quick", "suspended")
        // At once: after the task ended and before its budget (1.5 s) ran out, when a host that
        // waited for the budget would suspend it (its task ends 0.2 s in: a loaded machine's late
        // timers have 1.3 s, not a tight window).
        #expect(suspended.time! >= ended.time!)
        #expect(suspended.time!.timeIntervalSince(entered.callbackStarted) < 1.5, "suspended \(suspended.time!.timeIntervalSince(entered.callbackStarted)) s in")
        // Past the 1.0 s at which its expiration handlers would have been due: none was.
        host.send("sleep 1.2")
        host.send("ps")
        try host.waitFor("ps") { $0.event == "ps" }
        #expect(!host.allEvents.contains { $0.event == "expiration" })
        #expect(!scratch.recorded("Quick").contains { $0.hasPrefix("expiration") })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func theBudgetBelongsToTheAppNotToEachTask() throws {
        let scratch = try Scratch()
        // Two tasks begun in the foreground: the clock starts on entering the background, and
        // two tasks do not give twice the time.
        let host = try HostSession(
            [try scratch.bundle("Greedy", behavior: ["beginTaskIn": "didBecomeActive", "taskCount": 2])],
            scratch: scratch, arguments: Self.shortBudget)
        try host.waitFor("Greedy", "didBecomeActive")
        Thread.sleep(forTimeInterval: 0.5)  // time in the foreground must not count against the budget
        host.send("home")
        let entered = try host.waitFor("Greedy", "didEnterBackground")
        let end = try host.waitFor("Greedy", "terminated")
        #expect(end.code == "0x2182bad2")
        let elapsed = end.time!.timeIntervalSince(entered.callbackStarted)
        // At least the whole budget and grace (the half second in the foreground did not count),
        // and short of what a budget for each task would give (1.5 + 1.5 + 0.5 s): a loaded
        // machine may fire the host's timers late, never early.
        #expect(elapsed >= 1.95, "one 1.5 s budget + 0.5 s grace, from entering the background: \(elapsed) s")
        #expect(elapsed < 3.45, "not a budget for each task: \(elapsed) s")
        #expect(scratch.recorded("Greedy").filter { $0.hasPrefix("expiration") }.count == 2, "each task's handler runs")
        #expect(scratch.recorded("Greedy").contains("remaining 1.5"), "backgroundTimeRemaining in didEnterBackground is the app's one budget")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test func moreThanAThousandOpenTasksIsKilledWithBada5e47() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Hoarder", behavior: ["beginTaskIn": "didBecomeActive", "taskCount": 1001])], scratch: scratch)
        let end = try host.waitFor("Hoarder", "terminated")
        #expect(end.code == "0xbada5e47")
        #expect(end.reason == "opened 1001 background tasks at once; the limit is 1000")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    @Test func endingAnUnknownTaskWarnsAndDoesNotCrash() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Sloppy", behavior: ["endInvalidTask": true])], scratch: scratch)
        let warning = try host.waitFor("Sloppy", "warning")
        #expect(warning.detail == "endBackgroundTask(_:) called with BackgroundTaskIdentifier(4242), which is not an open background task; ignoring it")
        try waitUntil("the app carries on") { scratch.recorded("Sloppy").contains("survived endBackgroundTask") }
        try host.waitForStandardError(containing: "AppHostKit: warning: endBackgroundTask(_:) called with BackgroundTaskIdentifier(4242)")
        #expect(!host.allEvents.contains { $0.event == "terminated" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
