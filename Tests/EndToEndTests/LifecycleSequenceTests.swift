import Foundation
import Testing

/// README.md's life-cycle sequences 1–7 against real app processes. Each test checks what the app itself
/// recorded inside each callback (its applicationState), not the host's log.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LifecycleSequenceTests {
    @Test func launchToForegroundThenBackgroundThenForeground() throws {
        let scratch = try Scratch()
        let probe = try scratch.bundle("Seq")
        let host = try HostSession([probe], scratch: scratch)

        try host.waitFor("Seq", "didBecomeActive")
        #expect(scratch.recorded("Seq").first == "launch reason=user remaining=max")
        #expect(scratch.callbacks("Seq") == [
            "willFinishLaunching inactive", "didFinishLaunching inactive", "didBecomeActive active",
        ])

        host.send("home")
        let suspended = try host.waitFor("Seq", "suspended")
        #expect(suspended.state == "suspended")
        #expect(Array(scratch.callbacks("Seq").suffix(2)) == ["willResignActive active", "didEnterBackground background"])
        #expect(scratch.recorded("Seq").contains("remaining 30.0"), "the background budget starts at the policy's 30 s")
        let order = host.allEvents.filter { $0.name == "Seq" }.map(\.event)
        #expect(Array(order.suffix(4)) == ["willResignActive", "didEnterBackground", "snapshot", "suspended"])

        host.send("open Seq")
        try host.waitFor("Seq", "didBecomeActive", occurrence: 2)
        #expect(Array(scratch.callbacks("Seq").suffix(2)) == ["willEnterForeground background", "didBecomeActive active"])
        #expect(host.allEvents.contains { $0.name == "Seq" && $0.event == "resumed" })

        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func interruptionResignsAndReactivates() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Call")], scratch: scratch)
        try host.waitFor("Call", "didBecomeActive")

        host.send("interrupt Call 0.3")
        try host.waitFor("Call", "willResignActive")
        try host.waitFor("Call", "didBecomeActive", occurrence: 2)
        #expect(Array(scratch.callbacks("Call").suffix(2)) == ["willResignActive active", "didBecomeActive active"])

        // An interruption the user leaves instead: straight on to the background (sequence 2).
        host.send("interrupt Call")
        try host.waitFor("Call", "willResignActive", occurrence: 2)
        host.send("home")
        try host.waitFor("Call", "suspended")
        #expect(Array(scratch.callbacks("Call").suffix(2)) == ["willResignActive active", "didEnterBackground background"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func launchDirectlyIntoTheBackground() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Quiet")], scratch: scratch, arguments: ["--background"])
        try host.waitFor("Quiet", "suspended")
        #expect(scratch.recorded("Quiet").first == "launch reason=background remaining=max")
        #expect(scratch.callbacks("Quiet") == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background",
        ])
        #expect(!host.allEvents.contains { $0.event == "didBecomeActive" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func sequence6ASuspendedAppResumedIntoTheBackground() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Woken")], scratch: scratch)
        try host.waitFor("Woken", "didBecomeActive")
        host.send("home")
        try host.waitFor("Woken", "suspended")
        host.send("wake Woken")
        let resumed = try host.waitFor("Woken", "resumed")
        #expect(resumed.detail == "in the background")
        try host.waitFor("Woken", "suspended", occurrence: 2)
        #expect(Array(scratch.callbacks("Woken").suffix(2)) == ["didEnterBackground background", "didEnterBackground background"])
        #expect(!host.allEvents.contains { $0.event == "willEnterForeground" || $0.event == "didBecomeActive" && $0.time! > resumed.time! })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func openingAnotherAppSendsTheFirstToTheBackground() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch)
        try host.waitFor("First", "didBecomeActive")
        host.send("open Second")
        try host.waitFor("Second", "didBecomeActive")
        try host.waitFor("First", "suspended")
        #expect(Array(scratch.callbacks("First").suffix(2)) == ["willResignActive active", "didEnterBackground background"])
        host.send("open First")
        try host.waitFor("Second", "suspended")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// As a user does it: the app switcher first, where the app resigns active, then swiped away.
    @Test func terminatingARunningAppCallsWillTerminate() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Ending")], scratch: scratch)
        try host.waitFor("Ending", "didBecomeActive")
        host.send("terminate Ending")
        let end = try host.waitFor("Ending", "terminated")
        #expect(scratch.callbacks("Ending").suffix(2) == ["willResignActive active", "willTerminate inactive"])
        #expect(host.allEvents.filter { $0.name == "Ending" }.map(\.event).suffix(4) == ["switcher", "willResignActive", "willTerminate", "terminated"])
        #expect(end.kind == "user-terminated")
        #expect(end.namespace == "USER")
        let report = try Report(end)
        #expect(report["kind"] as? String == "user-terminated")
        #expect(report["crash"] as? Bool == false)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func terminatingASuspendedAppIsAForceQuitWithoutCallbacks() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Frozen")], scratch: scratch)
        try host.waitFor("Frozen", "didBecomeActive")
        host.send("home")
        let suspended = try host.waitFor("Frozen", "suspended")
        host.send("terminate Frozen")
        let end = try host.waitFor("Frozen", "terminated")
        #expect(scratch.callbacks("Frozen").last == "didEnterBackground background", "a suspended app gets no callback")
        #expect(end.kind == "force-quit")
        #expect(end.reason == "force quit by the user while suspended (no callback)")
        // It dies at once: a frozen process is killed without being thawed first.
        #expect(end.time!.timeIntervalSince(suspended.time!) < 2)
        #expect(!processExists(suspended.pid!))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func quittingTheHostTerminatesEveryAppAsSequenceSevenSays() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Front"), try scratch.bundle("Back")], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")
        host.send("open Back")
        try host.waitFor("Front", "suspended")
        let back = try host.waitFor("Back", "didBecomeActive")
        host.send("quit")
        #expect(try host.waitForExit() == 0)
        #expect(scratch.callbacks("Back").last == "willTerminate active")
        #expect(scratch.callbacks("Front").last == "didEnterBackground background")
        let ends = host.allEvents.filter { $0.event == "terminated" }
        #expect(Set(ends.compactMap(\.name)) == ["Front", "Back"])
        #expect(ends.allSatisfy { $0.kind == "host-shutdown" })
        #expect(!processExists(back.pid!))
    }

    /// The launch's didBecomeActive comes with the configuration; the host's shutdown while the
    /// app is in didFinishLaunching withdraws it (commands typed to `apphost launch` wait for the
    /// launch to settle; a signal does not), and the app sees what it would have without it.
    @Test func aShutdownWhileTheAppLaunchesEndsItAfterDidFinishLaunching() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Slow", behavior: ["blockIn": "didFinishLaunching", "blockSeconds": 1.0])], scratch: scratch)
        // willFinishLaunching has returned: the app is in (or about to be in) didFinishLaunching
        // for a second, far longer than the signal and the withdrawal take to reach it.
        try host.waitFor("Slow", "willFinishLaunching")
        kill(host.process.processIdentifier, SIGTERM)
        #expect(try host.waitForExit() == 0)
        #expect(scratch.callbacks("Slow") == ["willFinishLaunching inactive", "didFinishLaunching inactive", "willTerminate inactive"])
        #expect(!host.allEvents.contains { $0.name == "Slow" && $0.event == "didBecomeActive" })
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalToTheHostTerminatesTheApps(signal: Int32) throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Signalled")], scratch: scratch)
        let active = try host.waitFor("Signalled", "didBecomeActive")
        kill(host.process.processIdentifier, signal)
        #expect(try host.waitForExit() == 0)
        #expect(scratch.callbacks("Signalled").last == "willTerminate active")
        #expect(!processExists(active.pid!))
    }

    @Test func aSecondInterruptKillsAtOnceAnAppStuckInWillTerminate() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Stubborn", behavior: ["blockIn": "willTerminate"])], scratch: scratch,
            arguments: ["--will-terminate-timeout", "60"])
        let active = try host.waitFor("Stubborn", "didBecomeActive")
        kill(host.process.processIdentifier, SIGINT)
        try waitUntil("the app is inside applicationWillTerminate") { scratch.callbacks("Stubborn").last == "willTerminate active" }
        kill(host.process.processIdentifier, SIGINT)
        #expect(try host.waitForExit(timeout: 5) == 0)
        let end = try #require(host.allEvents.first { $0.event == "terminated" })
        #expect(end.reason == "the host was told to stop at once; killed without a callback")
        #expect(!processExists(active.pid!))
    }

    @Test(.enabled(if: SuspensionTests.hasCgroupFreezer, "needs a writable cgroup v2 hierarchy with cgroup.freeze (see apphost doctor)"))
    func theHostLeavesNoCgroupBehind() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Tidy")], scratch: scratch)
        let started = try host.waitFor("apphost started") { $0.event == "started" }
        try host.waitFor("Tidy", "didBecomeActive")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        let detail = try #require(started.detail)
        let open = try #require(detail.firstIndex(of: "("), "the started event names the host's cgroup: \(detail)")
        let close = try #require(detail[open...].firstIndex(of: ")"))
        let path = String(detail[detail.index(after: open)..<close])
        #expect(path.hasPrefix("/sys/fs/cgroup/") && path.contains("/apphost-default-"), "\(path)")
        #expect(!FileManager.default.fileExists(atPath: path), "\(path) is removed at exit")
        // The pids controller's group of the same name, too.
        let pids = "/sys/fs/cgroup/pids/" + URL(fileURLWithPath: path).lastPathComponent
        #expect(!FileManager.default.fileExists(atPath: pids), "\(pids) is removed at exit")
    }

    @Test func noAppOutlivesAHostKilledBySIGKILL() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Orphan"), try scratch.bundle("Sleeper")], scratch: scratch)
        let orphan = try host.waitFor("Orphan", "didBecomeActive")
        host.send("open Sleeper")
        try host.waitFor("Orphan", "suspended")
        let sleeper = try host.waitFor("Sleeper", "didBecomeActive")
        kill(host.process.processIdentifier, SIGKILL)
        _ = try host.waitForExit()
        // The parent-death signal reaches both the running and the frozen app.
        #expect(waitUntilGone(orphan.pid!, timeout: 5))
        #expect(waitUntilGone(sleeper.pid!, timeout: 5))
    }

    @Test func containerDirectoriesAndFoundationLookUps() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Boxed", behavior: ["recordDirectories": true])], scratch: scratch)
        try host.waitFor("Boxed", "didBecomeActive")
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.boxed").resolvingSymlinksInPath().path
        let line = try #require(scratch.recorded("Boxed").first { $0.hasPrefix("directories") })
        #expect(line.contains("documents=\(container)/Documents"))
        #expect(line.contains("home=\(container)"))
        #expect(line.contains("tmp=\(container)/tmp/"))
        for directory in ["Documents", "Library", "tmp"] {
            #expect(FileManager.default.fileExists(atPath: "\(container)/\(directory)"))
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}

/// A termination report, read from the path its event names.
struct Report {
    let fields: [String: Any]

    init(_ event: Event, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = try #require(event.report, "the terminated event names its report", sourceLocation: sourceLocation)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        fields = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], sourceLocation: sourceLocation)
    }

    subscript(key: String) -> Any? { fields[key] }
}
