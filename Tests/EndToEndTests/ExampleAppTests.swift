import Foundation
import Testing

/// The example apps do what their comments promise, under the real host.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ExampleAppTests {
    private func example(_ name: String) throws -> URL {
        let url = Paths.apps.appendingPathComponent("\(name).app")
        try Paths.requireBuilt(url)
        return url
    }

    @Test func helloGoesThroughTheWholeLifeCycle() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Hello")], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        host.send("home")
        try host.waitFor("Hello", "suspended")
        host.send("open Hello")
        try host.waitFor("Hello", "didBecomeActive", occurrence: 2)
        host.send("terminate Hello")
        try host.waitFor("Hello", "terminated")
        try host.waitForStandardError(containing: "]: Hello, world! (state active)")
        try host.waitForStandardError(containing: "]: Goodbye.")
        // Regression: with its capabilities dropped, libdispatch logged "Failed to set thread
        // priority" into every app's output while LIBDISPATCH_LOG was stderr.
        #expect(!host.standardError.contains("thread priority"))
        #expect(!host.standardError.contains("log file opened"))
        // The default profile is wide enough for ordinary Foundation code: nothing refused.
        #expect(host.allEvents.filter { $0.event == "violation" }.isEmpty, "no sandbox violation")
        #expect(host.allEvents.contains { $0.event == "sandboxed" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func notesSavesHidesItsSnapshotAndSyncsUnderABackgroundTask() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Notes")], scratch: scratch)
        try host.waitFor("Notes", "didBecomeActive")
        host.send("home")
        let snapshot = try host.waitFor("Notes", "snapshot")
        #expect(snapshot.detail == "Notes (locked)")
        let began = try host.waitFor("Notes", "backgroundTaskBegan")
        #expect(began.detail == "#1 \"Sync notes\"")
        try host.waitFor("Notes", "backgroundTaskEnded")
        try host.waitFor("Notes", "suspended")
        let documents = scratch.stateDirectory.appendingPathComponent("containers/com.example.notes/Documents")
        let notes = try JSONDecoder().decode([String].self, from: Data(contentsOf: documents.appendingPathComponent("notes.json")))
        #expect(notes.count == 1)
        #expect(FileManager.default.fileExists(atPath: documents.appendingPathComponent("notes-backup.json").path))
        // The default profile is wide enough for ordinary Foundation code: nothing refused.
        #expect(host.allEvents.filter { $0.event == "violation" }.isEmpty, "no sandbox violation")
        #expect(host.allEvents.contains { $0.event == "sandboxed" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func journalLivesInItsSceneDelegate() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Journal")], scratch: scratch)
        try host.waitFor("Journal", "didBecomeActive")
        try host.waitForStandardError(containing: "]: Journal scene active (app state active)")
        host.send("home")
        let snapshot = try host.waitFor("Journal", "snapshot")
        #expect(snapshot.detail == "Journal (locked)", "the scene's window, as sceneWillResignActive left it")
        try host.waitFor("Journal", "suspended")
        host.send("open Journal")
        try host.waitFor("Journal", "didBecomeActive", occurrence: 2)
        host.send("terminate Journal")
        try host.waitFor("Journal", "terminated")
        try host.waitForStandardError(containing: "]: Journal terminated")
        #expect(host.standardError.contains("]: Journal scene disconnected"))
        let file = scratch.stateDirectory.appendingPathComponent("containers/com.example.journal/Documents/journal.json")
        let entries = try JSONDecoder().decode([String].self, from: Data(contentsOf: file))
        #expect(entries.count == 2, "one entry per visit to the foreground, saved at disconnection")
        #expect(host.allEvents.filter { $0.event == "violation" }.isEmpty, "no sandbox violation")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func pagesOpensAPagePerSceneAndRestoresItAfterAHostRestart() throws {
        let scratch = try Scratch()
        let first = try HostSession([try example("Pages")], scratch: scratch)
        try first.waitFor("Pages", "didBecomeActive")
        try first.waitForStandardError(containing: "]: Pages: scene 1 shows page 1 (new, read 0 times)")
        first.send("open Pages --new-scene")
        try first.waitFor("Pages", "connectScene")
        try first.waitForStandardError(containing: "]: Pages: scene 2 shows page 2 (new, read 0 times)")
        first.send("home")
        #expect(try first.waitFor("Pages", "snapshot").detail == "Page 2, read 1 times")
        try first.waitFor("Pages", "suspended")
        first.send("close-scene Pages 1")
        try first.waitFor("Pages", "disconnectScene")
        try first.waitForStandardError(containing: "]: Pages: scene 1 disconnected at page 1")
        first.closeInput()
        #expect(try first.waitForExit() == 0)

        let second = try HostSession([try example("Pages")], scratch: scratch)
        try second.waitFor("Pages", "didBecomeActive")
        try second.waitForStandardError(containing: "]: Pages: scene 2 shows page 2 (restored, read 1 times)")
        second.send("discard-scene Pages 1")
        try second.waitFor("Pages", "discardScene")
        try second.waitForStandardError(containing: "]: Pages: discarded scene 1")
        #expect(second.allEvents.filter { $0.event == "violation" || $0.event == "warning" }.isEmpty)
        second.closeInput()
        #expect(try second.waitForExit() == 0)
    }

    @Test func uploaderStopsCleanlyWhenItsBackgroundTimeRunsOut() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try example("Uploader")], scratch: scratch,
            arguments: ["--background-time", "1", "--expiration-warning", "0.5", "--expiration-grace", "0.5"])
        try host.waitFor("Uploader", "didBecomeActive")
        host.send("home")
        try host.waitFor("Uploader", "expiration")
        try host.waitFor("Uploader", "backgroundTaskEnded")
        try host.waitFor("Uploader", "suspended")
        #expect(!host.allEvents.contains { $0.event == "terminated" }, "it ended its task in time: suspended, not killed")
        let progress = scratch.stateDirectory.appendingPathComponent("containers/com.example.uploader/Documents/upload-progress")
        let sent = Int(try String(contentsOf: progress, encoding: .utf8)) ?? 0
        #expect(sent > 0 && sent < 100)
        try host.waitForStandardError(containing: "Uploader: background time is running out at chunk \(sent) of 100")
        // The default profile is wide enough for ordinary Foundation code: nothing refused.
        #expect(host.allEvents.filter { $0.event == "violation" }.isEmpty, "no sandbox violation")
        #expect(host.allEvents.contains { $0.event == "sandboxed" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}

/// The other commands of the CLI, run as a user would.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CommandLineTests {
    @Test func doctorReportsTheMechanisms() throws {
        let result = try runApphost(["doctor"])
        #expect(result.status == 0)
        for name in [
            "seccomp filter", "seccomp user notification", "libseccomp user notification", "Landlock", "pidfd", "cgroup v2 freezer",
            "cgroup v1 freezer", "cgroup v1 pids controller", "PID and mount namespaces", "per-app users", "host capabilities",
            "project quotas", "disk images", "clone3", "app-process binary", "fast cgroup moves",
        ] {
            #expect(result.output.contains("  \(name): "), "doctor reports \(name)")
        }
        // Then how it would launch, suspend, confine, limit memory and storage, and each
        // guarantee of the sandbox.
        let summary = result.output.split(separator: "\n").filter { !$0.hasPrefix("yes  ") && !$0.hasPrefix("no   ") }
            .map { String($0.prefix { $0 != ":" }) }
        #expect(summary.prefix(5) == ["launcher", "suspension", "sandbox", "memory", "storage"])
        #expect(summary.dropFirst(5).count == 5 && summary.dropFirst(5).allSatisfy { $0 == "holds" || $0 == "DEGRADED" }, "\(summary)")
    }

    @Test func psShowsEachApp() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Listed"), try scratch.bundle("Idle")], scratch: scratch)
        let active = try host.waitFor("Listed", "didBecomeActive")
        host.send("ps")
        let listed = try host.waitFor("ps of Listed") { $0.event == "ps" && $0.name == "Listed" }
        let idle = try host.waitFor("ps of Idle") { $0.event == "ps" && $0.name == "Idle" }
        #expect(listed.state == "active")
        #expect(listed.pid == active.pid)
        #expect(listed.fields["openBackgroundTasks"] as? Int == 0)
        #expect(listed.fields["snapshot"] == nil, "no snapshot before the app first leaves the foreground")
        #expect(idle.state == "not-running")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func launchHelpListsTheCommandLanguage() throws {
        let result = try runApphost(["launch", "--help"])
        for word in ["--script", "--json", "--background", "--policy", "--background-time", "wait APP STATE [TIMEOUT]", "interrupt APP [SECONDS]"] {
            #expect(result.output.contains(word), "help mentions \(word)")
        }
    }

    /// docs/policy.md's table is checked against `Policy.knobs` (PolicyKnobTests); here every
    /// flag it names is in `launch --help` and reads its value through its knob.
    @Test func launchHelpListsEveryPolicyFlagOfThePolicyPage() throws {
        let page = try String(contentsOf: Paths.packageRoot.appendingPathComponent("docs/policy.md"), encoding: .utf8)
        let section = try #require(page.components(separatedBy: "\n## ").first)
        let flags = section.split(separator: "\n").filter { $0.hasPrefix("| ") }.compactMap { row in
            row.split(separator: "|").dropFirst(2).first?.split(separator: "`").dropFirst().first?.split(separator: " ").first
        }
        #expect(flags.count > 25 && flags.contains("--suspend-timeout"))
        let help = try runApphost(["launch", "--help"]).output
        for flag in flags { #expect(help.contains(flag), "launch --help lists \(flag)") }
        let result = try runApphost(["launch", "--suspend-timeout", "0", "Any.app"])
        #expect(result.status == 1)
        #expect(result.error == "apphost: --suspend-timeout must be a positive number of seconds\n")
    }

    @Test func aPolicyFileSetsTheBudgets() throws {
        let scratch = try Scratch()
        let policy = scratch.url.appendingPathComponent("policy.json")
        try Data(#"{"didEnterBackgroundTimeout": 0.4}"#.utf8).write(to: policy)
        let host = try HostSession(
            [try scratch.bundle("Governed", behavior: ["blockIn": "didEnterBackground"])], scratch: scratch,
            arguments: ["--policy", policy.path])
        try host.waitFor("Governed", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Governed", "terminated")
        #expect(end.reason == "did not return from applicationDidEnterBackground(_:) within 0.4 s")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func aBadPolicyFileIsOneLine() throws {
        let scratch = try Scratch()
        let policy = scratch.url.appendingPathComponent("policy.json")
        try Data(#"{"backgroundTim": 3}"#.utf8).write(to: policy)
        let result = try runApphost(["launch", "--policy", policy.path, try scratch.bundle("Any").path])
        #expect(result.status == 1)
        #expect(result.error == "apphost: \(policy.path): unknown key backgroundTim; did you mean backgroundTime?\n")
        #expect(result.error.split(separator: "\n").count == 1)
    }
}

/// The background-mode examples: the scheduler runs their tasks when due.
extension ExampleAppTests {
    @Test func weatherRefreshesItsForecastWhenItsRefreshTaskComesDue() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Weather")], scratch: scratch)
        try host.waitFor("Weather", "didBecomeActive")
        host.send("home")
        try host.waitFor("Weather", "suspended")
        host.send("tasks")
        let pending = try host.waitFor("a pending task") { $0.event == "task" }
        #expect(pending.fields["identifier"] as? String == "com.example.weather.refresh")
        #expect(pending.fields["app"] as? String == "com.example.weather", "a task line names its app as every event does")
        #expect((pending.fields["waitingFor"] as? String)?.hasPrefix("its earliest begin date") == true)

        host.send("advance 3600")
        try host.waitFor("Weather", "launchTask")
        let completed = try host.waitFor("Weather", "taskCompleted")
        #expect(completed.detail == "com.example.weather.refresh success")
        try host.waitFor("Weather", "suspended", occurrence: 2)
        let snapshot = host.allEvents.last { $0.name == "Weather" && $0.event == "snapshot" }
        #expect(snapshot?.detail?.hasPrefix("Weather: Oslo ") == true, "the new snapshot shows the refreshed forecast")
        let stored = scratch.stateDirectory.appendingPathComponent("containers/com.example.weather/Documents/forecast.json")
        let forecast = try JSONSerialization.jsonObject(with: Data(contentsOf: stored)) as? [String: Any]
        #expect(forecast?["city"] as? String == "Oslo")
        try host.waitForStandardError(containing: "Weather: refreshed in the background: Oslo")

        host.send("tasks")
        let next = try host.waitFor("the next request", occurrence: 2) { $0.event == "task" }
        #expect(next.fields["identifier"] as? String == "com.example.weather.refresh", "the refresh asked for the next one")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func cleanupPrunesItsCacheOnlyOnExternalPower() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Cleanup")], scratch: scratch, arguments: ["--power", "battery"])
        try host.waitFor("Cleanup", "didBecomeActive")
        host.send("home")
        try host.waitFor("Cleanup", "suspended")
        let caches = scratch.stateDirectory.appendingPathComponent("containers/com.example.cleanup/Library/Caches/thumbnails")
        #expect(try FileManager.default.contentsOfDirectory(atPath: caches.path).count == 40)
        host.send("advance 86400")
        host.send("tasks")
        #expect(try host.waitFor("a pending task") { $0.event == "task" }.fields["waitingFor"] as? String == "external power")

        host.send("power plugged")
        try host.waitFor("Cleanup", "launchTask")
        #expect(try host.waitFor("Cleanup", "taskCompleted").detail == "com.example.cleanup.prune success")
        try host.waitFor("Cleanup", "suspended", occurrence: 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: caches.path).isEmpty)
        let log = scratch.stateDirectory.appendingPathComponent("containers/com.example.cleanup/Documents/cleanup.log")
        #expect(try String(contentsOf: log, encoding: .utf8) == "removed 40 of 40 cache files\n", "one run, though it asked again")
        host.send("tasks")
        let next = try host.waitFor("the next request", occurrence: 2) { $0.event == "task" }
        #expect((next.fields["waitingFor"] as? String)?.hasPrefix("its earliest begin date") == true, "tomorrow's")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func playerKeepsPlayingInTheBackgroundAndIsSuspendedWhenTheTrackEnds() throws {
        let scratch = try Scratch()
        let host = try HostSession([try example("Player")], scratch: scratch)
        try host.waitFor("Player", "didBecomeActive")
        try host.waitForStandardError(containing: "]: Player: playing a 4 s track")
        host.send("home")
        try host.waitFor("Player", "snapshot")
        host.send("ps")
        let status = try host.waitFor("ps of Player") { $0.event == "ps" && $0.name == "Player" }
        #expect(status.fields["keptRunningBy"] as? [String] == ["audio"])
        try host.waitFor("Player", "suspended")
        try host.waitForStandardError(containing: "]: Player: the track ended (state background)")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func runTrackerRecordsTheParkLoopInTheBackground() throws {
        let scratch = try Scratch()
        let route = Paths.packageRoot.appendingPathComponent("Examples/RunTracker/park-loop.gpx").path
        let host = try HostSession([try example("RunTracker")], scratch: scratch, arguments: ["--location-update-interval", "0.1"])
        try host.waitFor("RunTracker", "didBecomeActive")
        host.send("authorize RunTracker location always")
        host.send("home")
        try host.waitFor("RunTracker", "snapshot")
        host.send("location route \(route) --speed 2000")
        try host.waitFor("route end") { $0.event == "location" && $0.detail?.hasPrefix("park-loop.gpx finished") == true }
        try host.waitForStandardError(containing: "]: RunTracker: 48.84620,2.33720, ")
        host.send("terminate RunTracker")
        try host.waitFor("RunTracker", "terminated")
        let data = try #require(scratch.containerFile("com.example.runtracker", "Documents/run.json"))
        let run = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let meters = try #require(run["meters"] as? Double)
        #expect(meters > 1_000 && meters < 1_700, "about the loop's length")
        #expect(!host.allEvents.contains { $0.name == "RunTracker" && $0.event == "suspended" }, "held by its updates all along")
    }

    @Test func softphoneAnswersAVoIPPushWithACallAndIsSuspendedWhenItEnds() throws {
        let scratch = try Scratch()
        let push = scratch.url.appendingPathComponent("call.json")
        try Data(#"{"caller": "Alice", "seconds": 1}"#.utf8).write(to: push)
        let host = try HostSession([try scratch.bundle("Front"), try example("Softphone")], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")
        host.send("voip-push Softphone \(push.path)")
        try host.waitFor("Softphone", "call")
        try host.waitFor("Softphone", "suspended")
        try host.waitForStandardError(containing: "]: Softphone: Alice is calling")
        try host.waitForStandardError(containing: "]: Softphone: Alice hung up")
        #expect(!host.allEvents.contains { $0.event == "terminated" })
    }
}
