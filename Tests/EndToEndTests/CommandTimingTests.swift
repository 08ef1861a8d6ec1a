import Foundation
import Testing

/// When commands take effect: the first app named on the command line when the scheduler has
/// launched it already, commands that arrive while an app's transition is in flight, and the
/// scheduler's clock that `advance` moves across hosts.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CommandTimingTests {
    /// Writes a script for `--script`.
    func script(_ scratch: Scratch, _ lines: [String]) throws -> String {
        let url = scratch.url.appendingPathComponent("script-\(UUID().uuidString.prefix(6)).apphost")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
        return url.path
    }

    /// The scheduler's store of a state directory, as JSON.
    func store(_ scratch: Scratch) throws -> [String: Any] {
        let data = try Data(contentsOf: scratch.stateDirectory.appendingPathComponent("background-tasks.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    // MARK: The first app, already running

    /// Bug: a host started when a fetch was due launched the app into the background for it,
    /// then the user's launch of the same app said "Fetcher is already running" and exited 1.
    @Test func launchingAnAppTheSchedulerLaunchedForAFetchBringsItToTheForeground() throws {
        let scratch = try Scratch()
        let fetcher = try scratch.bundle("Fetcher", behavior: ["fetchInterval": 0.0], changes: ["UIBackgroundModes": ["fetch"]])
        let arguments = ["--minimum-background-fetch-interval", "1"]
        let first = try HostSession([fetcher], scratch: scratch, arguments: arguments)
        try first.waitFor("Fetcher", "fetchInterval")
        first.send("home")
        try first.waitFor("Fetcher", "suspended")
        first.closeInput()
        #expect(try first.waitForExit() == 0)
        // The next fetch is due once the scheduler's clock passes the date the store holds.
        let entry = try #require((try store(scratch)["apps"] as? [String: Any])?["test.fetcher"] as? [String: Any])
        let due = try #require(entry["nextFetch"] as? Double)
        // The condition is the wall clock itself (no host runs to announce it): wait until then.
        Thread.sleep(until: Date(timeIntervalSince1970: due + 0.1))

        let second = try HostSession([fetcher], scratch: scratch, arguments: arguments)
        let scheduled = try second.waitFor("Fetcher", "scheduler")
        #expect(scheduled.detail == "Fetcher: due: background fetch; launching it into the background (launch reason backgroundFetch)")
        try second.waitFor("Fetcher", "didBecomeActive")
        // Launched into the background, then opened by the user: sequence 3's callbacks.
        #expect(scratch.callbacks("Fetcher").suffix(4) == [
            "willFinishLaunching background", "didFinishLaunching background", "willEnterForeground background", "didBecomeActive active",
        ])
        // The fetch waits for the background.
        second.send("home")
        try second.waitFor("Fetcher", "fetchCompleted")
        try second.waitFor("Fetcher", "suspended")
        #expect(scratch.callbacks("Fetcher").suffix(3) == ["willResignActive active", "didEnterBackground background", "performFetch background"])
        second.closeInput()
        #expect(try second.waitForExit() == 0)
    }

    // MARK: Commands wait for transitions

    /// Bug: README's Weather walkthrough as a script ran `tasks` and `advance` while Weather was
    /// still launching: "no pending task requests", and nothing became due.
    @Test func aScriptsCommandsSeeTheTransitionsBeforeThemOver() throws {
        let scratch = try Scratch()
        let weather = Paths.apps.appendingPathComponent("Weather.app")
        try Paths.requireBuilt(weather)
        let file = try script(scratch, ["ps", "home", "tasks", "advance 3600"])
        let host = try HostSession([weather], scratch: scratch, arguments: ["--script", file])
        let listed = try host.waitFor("Weather in ps") { $0.event == "ps" && $0.name == "Weather" }
        #expect(listed.state == "active", "the first command sees the app launched")
        let task = try host.waitFor("the pending refresh") { $0.event == "task" }
        #expect(task.fields["identifier"] as? String == "com.example.weather.refresh")
        let advanced = try host.waitFor("the advance") { $0.event == "advance" }
        #expect(advanced.detail?.hasSuffix("; started Weather BGAppRefreshTask com.example.weather.refresh") == true, "\(advanced)")
        try host.waitFor("Weather", "taskCompleted")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        let order = host.allEvents.filter { ["didBecomeActive", "ps", "willResignActive", "suspended", "task", "advance"].contains($0.event) }
        #expect(order.map(\.event).prefix(6) == ["didBecomeActive", "ps", "willResignActive", "suspended", "task", "advance"])
    }

    /// A transition that does not end within the bound (the launch timeout) fails the command
    /// with one line naming what the app is in the middle of.
    @Test func aCommandFailsWhenTheAppDoesNotSettleInTime() throws {
        let scratch = try Scratch()
        let stuck = try scratch.bundle("Stuck", behavior: ["blockIn": "didReceiveMemoryWarning", "blockSeconds": 3.0])
        let file = try script(scratch, ["memory-warning Stuck", "tasks"])
        let host = try HostSession(
            [stuck], scratch: scratch, arguments: ["--script", file, "--launch-timeout", "1", "--callback-timeout", "10"])
        #expect(try host.waitForExit() == 1)
        #expect(host.standardError.contains(
            "apphost: \(file):2: waited 1.0 s for the apps to settle: Stuck is still in applicationDidReceiveMemoryWarning(_:)\n"),
            "\(host.standardError)")
        #expect(!host.allEvents.contains { $0.event == "clock" }, "tasks did not run")
        #expect(host.allEvents.contains { $0.name == "Stuck" && $0.event == "didReceiveMemoryWarning" }, "the host waited for it to quit")
    }

    // MARK: The scheduler's clock

    /// Bug: `advance` persisted the clock's offset for the next host and nothing showed or reset it.
    @Test func theSchedulersClockIsShownAndCanBeReset() throws {
        let scratch = try Scratch()
        let app = try scratch.bundle("Clocked")
        let first = try HostSession([app], scratch: scratch, arguments: ["--script", try script(scratch, ["advance 3600", "tasks"])])
        let clock = try first.waitFor("the clock") { $0.event == "clock" }
        #expect(clock.fields["offsetSeconds"] as? Double == 3600)
        let now = try #require((clock.fields["now"] as? String).flatMap { Event.parser.date(from: $0) })
        #expect(abs(now.timeIntervalSince(try #require(clock.time)) - 3600) < 5)
        first.closeInput()
        #expect(try first.waitForExit() == 0)

        let second = try HostSession([app], scratch: scratch, arguments: ["--script", try script(scratch, ["advance reset", "tasks"])])
        let started = try second.waitFor("started") { $0.event == "started" }
        #expect(started.detail?.contains(" (3600.0 s ahead of real time)") == true, "\(started)")
        let reset = try second.waitFor("the reset") { $0.event == "advance" }
        #expect(reset.detail?.hasPrefix("scheduler clock reset to real time, ") == true)
        #expect(reset.detail?.hasSuffix(" (it was 3600.0 s ahead)") == true, "\(reset)")
        let after = try second.waitFor("the clock after the reset") { $0.event == "clock" }
        #expect(after.fields["offsetSeconds"] as? Double == 0)
        second.closeInput()
        #expect(try second.waitForExit() == 0)
        #expect(try store(scratch)["clockOffset"] as? Double == 0, "the next host starts on real time")
    }

    @Test func tasksShowsTheClockInHumanOutput() throws {
        let scratch = try Scratch()
        let app = try scratch.bundle("Plain")
        let file = try script(scratch, ["advance 60", "tasks", "advance reset", "tasks", "quit"])
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--script", file, app.path])
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n").filter { $0.hasPrefix("scheduler clock: ") }
        #expect(lines.count == 2, "\(result.output)")
        #expect(lines.first?.hasSuffix(" (60.0 s ahead of real time)") == true)
        #expect(lines.last?.hasSuffix(" (real time)") == true)
    }
}
