import Foundation
import Testing

/// Background modes against real app processes (docs/lifecycle.md, "The life cycle" and "Background modes": sequences 5 and 6, the time limits
/// and the BGTaskScheduler rules), each triggered on demand. The Probe records each callback with
/// the state it saw; BackgroundProbes.swift lists its behaviours.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BackgroundModeTests {
    static let allModes = ["fetch", "processing", "remote-notification"]

    /// A Probe with background modes and permitted identifiers.
    func app(
        _ scratch: Scratch, _ name: String, modes: [String] = allModes,
        identifiers: [String] = ["test.refresh", "test.clean"], behavior: [String: Any] = [:]
    ) throws -> URL {
        try scratch.bundle(name, behavior: behavior, changes: ["UIBackgroundModes": modes, "BGTaskSchedulerPermittedIdentifiers": identifiers])
    }

    func lifecycle(_ host: HostSession, _ name: String) -> [String] {
        let names: Set = [
            "launching", "willFinishLaunching", "didFinishLaunching", "didBecomeActive", "didEnterBackground", "resumed",
            "performFetch", "fetchCompleted", "didReceiveRemoteNotification", "notificationCompleted", "launchTask",
            "taskExpired", "taskCompleted", "snapshot", "suspended", "terminated",
        ]
        return host.allEvents.filter { $0.name == name && names.contains($0.event) }.map(\.event)
    }

    func payload(_ scratch: Scratch, _ text: String) throws -> String {
        let url = scratch.url.appendingPathComponent("push-\(UUID().uuidString.prefix(6)).json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    // MARK: Fetch

    @Test func aFetchLaunchesAnAppThatIsNotRunningIntoTheBackground() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Front"), try app(scratch, "Fetcher")], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")

        host.send("fetch Fetcher")
        let announced = try host.waitFor("Fetcher", "fetch")
        #expect(announced.detail == "Fetcher: performFetch; launching it into the background (launch reason backgroundFetch)")
        try host.waitFor("Fetcher", "suspended")
        #expect(scratch.recorded("Fetcher").first == "launch reason=backgroundFetch remaining=max")
        #expect(scratch.callbacks("Fetcher") == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background",
            "performFetch background",
        ])
        #expect(scratch.recorded("Fetcher").last == "completion newData")
        #expect(lifecycle(host, "Fetcher") == [
            "launching", "willFinishLaunching", "didFinishLaunching", "didEnterBackground", "performFetch", "fetchCompleted",
            "snapshot", "suspended",
        ])
        #expect(host.allEvents.first { $0.name == "Fetcher" && $0.event == "fetchCompleted" }?.detail == "newData")
        #expect(host.allEvents.last { $0.name == "Front" }?.state == "active", "the foreground app is untouched")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aFetchThatNeverCallsItsCompletionHandlerIsKilledWith0x2182bad4() throws {
        let scratch = try Scratch()
        let fetcher = try app(scratch, "Slow", behavior: ["fetchResult": "never"])
        let host = try HostSession([fetcher], scratch: scratch, arguments: ["--background-fetch-time", "0.5"])
        try host.waitFor("Slow", "didBecomeActive")
        host.send("home")
        try host.waitFor("Slow", "suspended")
        host.send("fetch Slow")
        try host.waitFor("Slow", "performFetch")  // its record is written; the handler is never called
        let end = try host.waitFor("Slow", "terminated")
        #expect(end.code == "0x2182bad4")
        #expect(end.namespace == "RUNNINGBOARD")
        #expect(end.kind == "background-fetch")
        #expect(end.reason == "did not call the completion handler of application(_:performFetchWithCompletionHandler:) within 0.5 s")
        #expect(scratch.callbacks("Slow").suffix(2) == ["didEnterBackground background", "performFetch background"])
    }

    @Test func triggersRefuseWhatIOSWouldRefuse() throws {
        let scratch = try Scratch()
        let plain = try scratch.bundle("Plain")
        let fetchOnly = try app(scratch, "FetchOnly", modes: ["fetch"], identifiers: ["test.refresh"])
        let host = try HostSession([plain, fetchOnly], scratch: scratch)
        try host.waitFor("Plain", "didBecomeActive")
        let silent = try payload(scratch, #"{"aps": {"content-available": 1}}"#)
        let alert = try payload(scratch, #"{"aps": {"alert": "Hello"}}"#)

        let refusals: [(String, String)] = [
            ("fetch Plain", "Plain has no fetch in Info.plist UIBackgroundModes: iOS would not wake it for a background fetch"),
            ("run-task FetchOnly test.other", "test.other is not in FetchOnly's BGTaskSchedulerPermittedIdentifiers (test.refresh): iOS would not run it"),
            ("push FetchOnly \(silent)", "FetchOnly has no remote-notification in Info.plist UIBackgroundModes: iOS would not wake it for a background notification"),
            ("expire FetchOnly", "FetchOnly is not running"),
        ]
        for (command, message) in refusals {
            host.send(command)
            try host.waitForStandardError(containing: "apphost: stdin: \(message)")
        }
        host.send("open FetchOnly")
        try host.waitFor("FetchOnly", "didBecomeActive")
        host.send("fetch FetchOnly")
        try host.waitForStandardError(containing: "FetchOnly is in the foreground (active); background events reach it in the background (home first)")
        host.send("push Plain \(alert)")
        try host.waitForStandardError(containing: "Plain has no remote-notification")
        #expect(!host.allEvents.contains { $0.event == "performFetch" || $0.event == "launchTask" })

        // One host per instance: the next starts once this one has ended.
        host.closeInput()
        _ = try host.waitForExit()
        let pusher = try app(scratch, "Pusher")
        let second = try HostSession([pusher], scratch: scratch)
        try second.waitFor("Pusher", "didBecomeActive")
        second.send("push Pusher \(alert)")
        try second.waitForStandardError(
            containing: "\(alert) is not a background notification: its aps has no \"content-available\": 1, so iOS would not wake the app for it")
        #expect(!second.allEvents.contains { $0.event == "didReceiveRemoteNotification" })
    }

    // MARK: Remote notifications

    @Test func aNotificationReachesTheForegroundAppAndResumesASuspendedOne() throws {
        let scratch = try Scratch()
        let host = try HostSession([try app(scratch, "Pusher")], scratch: scratch)
        try host.waitFor("Pusher", "didBecomeActive")
        let file = try payload(scratch, #"{"aps": {"content-available": 1}, "city": "Oslo"}"#)

        host.send("push Pusher \(file)")
        try host.waitFor("Pusher", "notificationCompleted")
        #expect(scratch.callbacks("Pusher").last == "didReceiveRemoteNotification active")
        #expect(scratch.recorded("Pusher").contains("payload aps={content-available=1},city=Oslo"))

        host.send("home")
        try host.waitFor("Pusher", "suspended")
        host.send("push Pusher \(file)")
        try host.waitFor("Pusher", "suspended", occurrence: 2)
        #expect(scratch.callbacks("Pusher").suffix(2) == ["didEnterBackground background", "didReceiveRemoteNotification background"])
        #expect(lifecycle(host, "Pusher").suffix(6) == [
            "resumed", "didEnterBackground", "didReceiveRemoteNotification", "notificationCompleted", "snapshot", "suspended",
        ])
        host.send("ps")
        let status = try host.waitFor("ps of Pusher") { $0.event == "ps" && $0.name == "Pusher" }
        #expect(status.fields["backgroundWakeups"] as? Int == 1)
    }

    @Test func aNotificationLaunchCarriesItsPayloadInTheLaunchOptions() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Front"), try app(scratch, "Pusher")], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")
        host.send("push Pusher \(try payload(scratch, #"{"aps": {"content-available": 1}, "id": 7}"#))")
        try host.waitFor("Pusher", "suspended")
        let recorded = scratch.recorded("Pusher")
        #expect(recorded.first == "launch reason=remoteNotification remaining=max")
        #expect(recorded.contains("launch payload aps={content-available=1},id=7"))
        #expect(scratch.callbacks("Pusher").last == "didReceiveRemoteNotification background")
    }

    // MARK: BGTaskScheduler

    @Test func runTaskLaunchesTheAppAndExpireRunsTheExpirationHandler() throws {
        let scratch = try Scratch()
        let tasker = try app(scratch, "Tasker", behavior: ["registerTasks": ["test.refresh"], "task": "completeOnExpiration"])
        let host = try HostSession([try scratch.bundle("Front"), tasker], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")

        host.send("run-task Tasker test.refresh")
        try host.waitFor("Tasker", "launchTask")
        #expect(scratch.recorded("Tasker").first == "launch reason=backgroundTask remaining=max")
        host.send("expire Tasker test.refresh")
        try host.waitFor("Tasker", "suspended")
        let recorded = scratch.recorded("Tasker")
        #expect(recorded.contains("registered test.refresh true"))
        #expect(recorded.suffix(3) == [
            "launchHandler test.refresh refresh background main=true", "taskExpiration test.refresh main=true", "completed test.refresh false",
        ])
        #expect(lifecycle(host, "Tasker").suffix(6) == [
            "didEnterBackground", "launchTask", "taskExpired", "taskCompleted", "snapshot", "suspended",
        ])
        #expect(host.allEvents.first { $0.event == "taskExpired" }?.detail == "test.refresh: expired on demand")
        #expect(host.allEvents.first { $0.event == "taskCompleted" }?.detail == "test.refresh failure")
    }

    @Test func aTaskStillRunningAfterItsExpirationIsKilledWith0x2182bad4() throws {
        let scratch = try Scratch()
        let tasker = try app(scratch, "Stuck", behavior: ["registerTasks": ["test.refresh"], "task": "never"])
        let host = try HostSession(
            [try scratch.bundle("Front"), tasker], scratch: scratch,
            arguments: ["--app-refresh-task-time", "0.4", "--expiration-grace", "0.9"])
        try host.waitFor("Front", "didBecomeActive")
        host.send("run-task Stuck test.refresh")
        let end = try host.waitFor("Stuck", "terminated")
        #expect(end.code == "0x2182bad4")
        #expect(end.kind == "bg-task")
        #expect(end.reason == "BGAppRefreshTask test.refresh did not call setTaskCompleted(success:) within 0.9 s of its expiration (its 0.4 s ran out)")
        #expect(scratch.recorded("Stuck").last == "taskExpiration test.refresh main=true")
    }

    @Test func registeringATaskTwiceOrAfterLaunchingTerminatesTheApp() throws {
        let scratch = try Scratch()
        let twice = try app(scratch, "Twice", behavior: ["registerTasks": ["test.refresh", "not.listed"], "registerTwice": true])
        let host = try HostSession([twice], scratch: scratch)
        let end = try host.waitFor("Twice", "terminated")
        #expect(end.kind == "bg-task-registration")
        #expect(end.reason == "registered a launch handler for the task test.refresh twice")
        #expect(scratch.recorded("Twice").contains("registered not.listed false"), "an identifier not permitted is refused")
        #expect(!scratch.recorded("Twice").contains("survived a second registration"))

        host.closeInput()
        _ = try host.waitForExit()
        let late = try app(scratch, "Late", behavior: ["registerTasks": ["test.refresh"], "registerIn": "didBecomeActive"])
        let second = try HostSession([late], scratch: scratch)
        let lateEnd = try second.waitFor("Late", "terminated")
        #expect(lateEnd.kind == "bg-task-registration")
        #expect(lateEnd.reason == "registered a launch handler for the task test.refresh after application(_:didFinishLaunchingWithOptions:) returned; register every task while launching")
    }

    @Test func submitThrowsTheSpecsErrorCodes() throws {
        let scratch = try Scratch()
        let submits: [[String: Any]] = [
            ["identifier": "test.refresh", "earliestIn": 3600.0], ["identifier": "test.refresh", "earliestIn": 7200.0],
            ["identifier": "test.refresh2"], ["identifier": "test.clean", "kind": "processing"], ["identifier": "not.listed"],
        ]
        let submitter = try app(
            scratch, "Submitter", modes: ["fetch"], identifiers: ["test.refresh", "test.refresh2", "test.clean"], behavior: ["submit": submits])
        let host = try HostSession([submitter], scratch: scratch)
        try host.waitFor("Submitter", "didBecomeActive")
        #expect(scratch.recorded("Submitter").filter { $0.hasPrefix("submit") } == [
            "submitted test.refresh", "submitted test.refresh", "submit test.refresh2 error=2", "submit test.clean error=3",
            "submit not.listed error=3",
        ])
        host.send("tasks")
        let pending = try host.waitFor("a pending task") { $0.event == "task" }
        #expect(pending.fields["identifier"] as? String == "test.refresh")
        let earliest = try #require((pending.fields["earliestBeginDate"] as? String).flatMap { Event.parser.date(from: $0) })
        #expect(abs(earliest.timeIntervalSinceNow - 7200) < 60, "the second submission replaced the first")
        host.closeInput()
        #expect(try host.waitForExit() == 0)

        let off = try HostSession([submitter], scratch: scratch, arguments: ["--no-background-app-refresh"])
        try off.waitFor("Submitter", "didBecomeActive")
        #expect(scratch.recorded("Submitter").filter { $0.hasPrefix("submit") }.suffix(5).first == "submit test.refresh error=1")
    }

    // MARK: The scheduler

    @Test func theSchedulerRunsARequestWhenAdvanceReachesItsDate() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = ["registerTasks": ["test.refresh"], "submit": [["identifier": "test.refresh", "earliestIn": 3600.0]]]
        let host = try HostSession([try app(scratch, "Sched", behavior: behavior)], scratch: scratch)
        try host.waitFor("Sched", "didBecomeActive")
        host.send("home")
        try host.waitFor("Sched", "suspended")
        host.send("tasks")
        let pending = try host.waitFor("a pending task") { $0.event == "task" }
        #expect((pending.fields["waitingFor"] as? String)?.hasPrefix("its earliest begin date") == true)

        host.send("advance 3540")
        let early = try host.waitFor("advance") { $0.event == "advance" }
        #expect(early.detail?.hasSuffix("nothing became due") == true)
        host.send("advance 120")
        try host.waitFor("Sched", "launchTask")
        try host.waitFor("Sched", "suspended", occurrence: 2)
        #expect(host.allEvents.last { $0.event == "advance" }?.detail?.hasSuffix("started Sched BGAppRefreshTask test.refresh") == true)
        #expect(scratch.recorded("Sched").suffix(2) == ["launchHandler test.refresh refresh background main=true", "completed test.refresh true"])
        // Begun, the request is spent: nothing is kept taken for a later host to run again.
        let store = try String(contentsOf: scratch.stateDirectory.appendingPathComponent("background-tasks.json"), encoding: .utf8)
        #expect(!store.contains("\"taken\""), "\(store)")
    }

    @Test func aProcessingTaskWaitsForPowerAndEndsWhenItIsUnplugged() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = [
            "registerTasks": ["test.clean"], "task": "completeOnExpiration",
            "submit": [["identifier": "test.clean", "kind": "processing", "power": true]],
        ]
        let host = try HostSession([try app(scratch, "Cleaner", behavior: behavior)], scratch: scratch, arguments: ["--power", "battery"])
        try host.waitFor("Cleaner", "didBecomeActive")
        host.send("home")
        try host.waitFor("Cleaner", "suspended")
        host.send("tasks")
        #expect(try host.waitFor("a pending task") { $0.event == "task" }.fields["waitingFor"] as? String == "external power")

        host.send("power plugged")
        try host.waitFor("Cleaner", "launchTask")
        host.send("power battery")
        try host.waitFor("Cleaner", "suspended", occurrence: 2)
        #expect(host.allEvents.first { $0.event == "taskExpired" }?.detail == "test.clean: external power was lost")
        #expect(scratch.recorded("Cleaner").suffix(3) == [
            "launchHandler test.clean processing background main=true", "taskExpiration test.clean main=true", "completed test.clean false",
        ])
    }

    @Test func aProcessingTaskEndsWithoutAKillWhenTheUserOpensTheApp() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = ["registerTasks": ["test.clean"], "task": "never", "submit": [["identifier": "test.clean", "kind": "processing", "earliestIn": 3600.0]]]
        let host = try HostSession([try app(scratch, "Opened", behavior: behavior)], scratch: scratch, arguments: ["--expiration-grace", "0.2"])
        try host.waitFor("Opened", "didBecomeActive")
        host.send("home")
        try host.waitFor("Opened", "suspended")
        host.send("run-task Opened test.clean")
        try host.waitFor("Opened", "launchTask")
        host.send("open Opened")
        let expired = try host.waitFor("Opened", "taskExpired")
        #expect(expired.detail == "test.clean: the user opened the app")
        try host.waitFor("Opened", "didBecomeActive", occurrence: 2)
        // Absence of a kill: give it twice the grace, then look.
        host.send("sleep 0.4")
        host.send("ps")
        let status = try host.waitFor("ps") { $0.event == "ps" }
        #expect(status.state == "active")
        #expect(scratch.recorded("Opened").contains("launchHandler test.clean processing background main=true"))
    }

    @Test func aForceQuitAppIsNotWokenUntilTheUserOpensItAgain() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = ["registerTasks": ["test.refresh"], "submit": [["identifier": "test.refresh", "earliestIn": 60.0]]]
        let host = try HostSession([try app(scratch, "Quitter", behavior: behavior)], scratch: scratch)
        try host.waitFor("Quitter", "didBecomeActive")
        host.send("home")
        try host.waitFor("Quitter", "suspended")
        host.send("terminate Quitter")
        #expect(try host.waitFor("Quitter", "terminated").kind == "force-quit")

        host.send("fetch Quitter")
        try host.waitForStandardError(
            containing: "Quitter was force quit by the user: iOS wakes it in the background only after the user opens it again (open Quitter)")
        host.send("advance 120")
        #expect(try host.waitFor("advance") { $0.event == "advance" }.detail?.hasSuffix("nothing became due") == true)
        host.send("tasks")
        #expect(try host.waitFor("a pending task") { $0.event == "task" }.fields["waitingFor"] as? String == "the user force quit the app")

        host.send("open Quitter")
        try host.waitFor("Quitter", "didBecomeActive", occurrence: 2)
        host.send("home")
        try host.waitFor("Quitter", "suspended", occurrence: 2)
        // Launched again, it submitted its request again: 60 s from then on the scheduler's clock.
        host.send("advance 60")
        try host.waitFor("Quitter", "launchTask")
        try host.waitFor("Quitter", "suspended", occurrence: 3)
    }

    // MARK: Persistence

    /// A request the scheduler ran is gone from the disk before the app runs it. Regression
    /// (found by scripts/chaos): the removal was written 25 ms after the task launched, and a
    /// host killed in between left the request pending as well as run.
    @Test func aRequestThatRanIsNotPendingAfterAKill() throws {
        let scratch = try Scratch()
        let keeper = {
            try self.app(scratch, "Keeper", behavior: ["registerTasks": ["test.refresh", "test.clean"], "submit": $0])
        }
        let first = try HostSession([try keeper([["identifier": "test.refresh", "earliestIn": 60.0]])], scratch: scratch)
        try first.waitFor("Keeper", "taskSubmitted")
        first.send("home")
        try first.waitFor("Keeper", "suspended")
        first.send("advance 60")
        try first.waitFor("Keeper", "launchTask")
        kill(first.process.processIdentifier, SIGKILL)
        #expect(try first.waitForExit() == SIGKILL)

        let restarted = try HostSession([try scratch.bundle("Front"), try keeper([])], scratch: scratch)
        try restarted.waitFor("Front", "didBecomeActive")
        restarted.send("tasks")
        try restarted.waitFor("the scheduler's clock") { $0.event == "clock" }
        restarted.send("ps")
        try restarted.waitFor("a ps line after the tasks") { $0.event == "ps" }
        #expect(!restarted.allEvents.contains { $0.event == "task" }, "nothing pending: the request ran")
        restarted.closeInput()
        #expect(try restarted.waitForExit() == 0)
    }

    /// A request the host said it took (`taskSubmitted`) is on the disk: the host kept it
    /// before it said so, and one killed (SIGKILL) right after has it at its next start. (A
    /// writer killed in the middle of a write: StateStoreTests.)
    @Test func pendingRequestsSurviveAHostRestartAndAKillRightAfterTheSubmission() throws {
        let scratch = try Scratch()
        let keeper = {
            try self.app(scratch, "Keeper", behavior: ["registerTasks": ["test.refresh", "test.clean"], "submit": $0])
        }
        let first = try HostSession([try keeper([["identifier": "test.refresh", "earliestIn": 3600.0]])], scratch: scratch)
        try first.waitFor("Keeper", "taskSubmitted")
        first.closeInput()
        #expect(try first.waitForExit() == 0)

        // The next host takes a second request and is killed the moment it says so.
        let killed = try HostSession(
            [try keeper([["identifier": "test.clean", "kind": "processing", "earliestIn": 7200.0]])], scratch: scratch)
        try killed.waitFor("Keeper", "taskSubmitted")
        kill(killed.process.processIdentifier, SIGKILL)
        #expect(try killed.waitForExit() == SIGKILL)

        let front = try scratch.bundle("Front")
        let restarted = try HostSession([front, try keeper([])], scratch: scratch)
        try restarted.waitFor("Front", "didBecomeActive")
        restarted.send("tasks")
        try restarted.waitFor("the pending tasks", occurrence: 2) { $0.event == "task" }
        let pending = restarted.allEvents.filter { $0.event == "task" }
        #expect(pending.map(\.name) == ["Keeper", "Keeper"])
        #expect(Set(pending.compactMap { $0.fields["identifier"] as? String }) == ["test.refresh", "test.clean"])
        restarted.send("advance 3600")
        try restarted.waitFor("Keeper", "launchTask")
        try restarted.waitFor("Keeper", "suspended")
        #expect(scratch.recorded("Keeper").contains("launch reason=backgroundTask remaining=max"))
        #expect(scratch.recorded("Keeper").suffix(2) == ["launchHandler test.refresh refresh background main=true", "completed test.refresh true"])
    }
}
