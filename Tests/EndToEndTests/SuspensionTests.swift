import Foundation
import Testing

/// Suspension stops every thread of the app, with either mechanism, and resumes them.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SuspensionTests {
    /// Whether the host can create cgroup v2 groups with cgroup.freeze here (as `apphost doctor` reports).
    static let hasCgroupFreezer: Bool = {
        (try? runApphost(["doctor"]))?.output.contains("yes  cgroup v2 freezer") == true
    }()

    @Test func suspensionWithSIGSTOPStopsEveryThreadAndResumesThem() throws {
        try checkSuspension(mechanism: "sigstop")
    }

    @Test(.enabled(if: hasCgroupFreezer, "needs a writable cgroup v2 hierarchy with cgroup.freeze (see apphost doctor)"))
    func suspensionWithTheCgroupFreezerStopsEveryThreadAndResumesThem() throws {
        try checkSuspension(mechanism: "cgroup")
    }

    private func checkSuspension(mechanism: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Busy", behavior: ["busyThreads": 2])], scratch: scratch,
            arguments: ["--suspension", mechanism])
        let started = try host.waitFor("apphost started") { $0.event == "started" }
        #expect(started.detail?.contains(mechanism == "cgroup" ? "cgroup v2 freezer" : "SIGSTOP") == true)
        let active = try host.waitFor("Busy", "didBecomeActive")
        let pid = try #require(active.pid)
        let progressFile = scratch.stateDirectory.appendingPathComponent("containers/test.busy/Documents/progress")
        func progress() -> Int { Int(((try? String(contentsOf: progressFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespaces)) ?? -1 }

        try waitUntil("the busy threads make progress") { progress() > 2 }
        host.send("home")
        try host.waitFor("Busy", "suspended")

        // While suspended: no progress, no CPU time, every thread stopped or frozen.
        let ticks = try #require(cpuTicks(pid))
        let count = progress()
        Thread.sleep(forTimeInterval: 0.3)  // an interval in which running threads would spin ~60 ticks
        #expect(cpuTicks(pid) == ticks)
        #expect(progress() == count)
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        #expect(threads.count >= 3, "the main thread and two workers")
        if mechanism == "sigstop" {
            for thread in threads {
                let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8)
                #expect(stat.contains(") T "), "thread \(thread) is stopped")
            }
        }

        host.send("open Busy")
        try host.waitFor("Busy", "didBecomeActive", occurrence: 2)
        try waitUntil("the threads run again") { progress() > count }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func theHostUsesNoCPUWhileEveryAppIsSuspended() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Idle1"), try scratch.bundle("Idle2")], scratch: scratch)
        try host.waitFor("Idle1", "didBecomeActive")
        host.send("open Idle2")
        try host.waitFor("Idle1", "suspended")
        try host.waitFor("Idle2", "didBecomeActive")
        host.send("home")
        try host.waitFor("Idle2", "suspended")
        try expectIdle(host.process.processIdentifier)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// A host of many apps, each launched and suspended in turn (scripts/benchmark --scale runs
    /// 2,000): it has raised its open-file limit to the hard limit (each app holds about eight
    /// of its descriptors; a soft limit of 1,024 ended a host at about a hundred apps), it
    /// answers `ps` with every app, and with all of them suspended it uses no CPU.
    @Test func aHostOfManyAppsAnswersAndStaysIdle() throws {
        let scratch = try Scratch()
        let names = (1...40).map { "Many\($0)" }
        let host = try HostSession(try names.map { try scratch.bundle($0) }, scratch: scratch)
        for (index, name) in names.enumerated() {
            if index > 0 { host.send("open \(name)") }
            try host.waitFor(name, "didBecomeActive", timeout: 30)
            host.send("home")
            try host.waitFor(name, "suspended", timeout: 30)
        }
        let hostPID = host.process.processIdentifier
        let limits = try String(contentsOfFile: "/proc/\(hostPID)/limits", encoding: .utf8)
        let files = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let values = files.split(separator: " ").filter { Int($0) != nil }
        #expect(values.count == 2 && values[0] == values[1], "soft and hard limits: \(files)")
        host.send("ps")
        for name in names {
            let status = try host.waitFor("ps of \(name)") { $0.event == "ps" && $0.name == name }
            #expect(status.state == "suspended")
        }
        try expectIdle(hostPID)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// The host accrues at most one clock tick of CPU over a second: it has no polling loop.
    /// A host that polls uses CPU in every second; one whose apps are all suspended uses none
    /// once what it was finishing (its last lines of output, a standby being made) is done: of
    /// up to three one-second windows, one must see at most a tick (10 ms).
    private func expectIdle(_ hostPID: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var windows: [Int] = []
        for _ in 0..<3 {
            let before = try #require(cpuTicks(hostPID), sourceLocation: sourceLocation)
            Thread.sleep(forTimeInterval: 1.0)  // the measured interval itself
            let after = try #require(cpuTicks(hostPID), sourceLocation: sourceLocation)
            windows.append(after - before)
            if after - before <= 1 { break }
        }
        #expect(windows.last.map { $0 <= 1 } == true, "a polling host accumulates ticks in every second: \(windows)", sourceLocation: sourceLocation)
    }
}
