import Foundation
import Testing

/// CPU in the background (EXC_RESOURCE) and the accounting `ps` and reports show, against real
/// app processes that spin and allocate.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct UsageTests {
    /// A fifth of a core over one second, measured every 50 ms: the 80 % over 60 s rule, made
    /// short, and low enough that a spinner reaches it on a loaded 2-core machine.
    static let shortWindow = ["--background-cpu-limit", "20", "--background-cpu-window", "1", "--resource-sample-interval", "0.05"]


    @Test func anAppSpinningInTheBackgroundIsEndedWithACPUResourceReport() throws {
        let scratch = try Scratch()
        let spinner = try scratch.bundle("Spinner", behavior: ["beginTaskIn": "didEnterBackground", "busyIn": "didEnterBackground"])
        let host = try HostSession([spinner], scratch: scratch, arguments: Self.shortWindow)
        try host.waitFor("Spinner", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Spinner", "terminated", timeout: 15)
        #expect(end.namespace == "EXC_RESOURCE")
        #expect(end.kind == "cpu")
        let reason = try #require(end.reason)
        #expect(reason.hasPrefix("used 0."))
        #expect(reason.contains(" s in the background ("))
        #expect(reason.hasSuffix("% of a core); the limit is 20 % of a core over 1.0 s"))
        let report = try Report(end)
        #expect(report["state"] as? String == "background")
        let usage = try #require(report["usage"] as? [String: Any])
        #expect(try #require(usage["cpuBackgroundSeconds"] as? Double) >= 0.2)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.resource)
    }

    @Test func spinningInTheForegroundIsNotLimited() throws {
        let scratch = try Scratch()
        let spinner = try scratch.bundle("Busy", behavior: ["busyThreads": 1])
        let host = try HostSession([spinner], scratch: scratch, arguments: Self.shortWindow)
        let pid = try #require(try host.waitFor("Busy", "didBecomeActive").pid)
        // Until it has used well over what a background app may in a whole window (0.2 s), and
        // more than a window has passed (0.8 s by the kernel's count: the host's lags a sample).
        let started = Date()
        let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))
        try waitUntil("the spinner has used 0.8 s of CPU over more than a window", timeout: 20) {
            (cpuTicks(pid) ?? 0) > ticksPerSecond * 8 / 10 && Date().timeIntervalSince(started) > 1.2
        }
        host.send("ps")
        let status = try host.waitFor("ps of Busy") { $0.event == "ps" && $0.name == "Busy" }
        #expect(status.state == "active")
        #expect(try #require(status.fields["cpuForegroundSeconds"] as? Double) > 0.6)
        #expect(!host.allEvents.contains { $0.event == "terminated" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func psAndTheReportShowWhoCostsWhat() throws {
        let scratch = try Scratch()
        let app = try scratch.bundle("Ledger", behavior: ["allocateMiB": 30, "beginTaskIn": "didEnterBackground", "endTaskAfter": 1.5])
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor("Ledger", "didBecomeActive")
        host.send("home")
        try host.waitFor("Ledger", "backgroundTaskBegan")
        try host.waitFor("Ledger", "didEnterBackground")
        host.send("ps")
        let working = try host.waitFor("ps in the background") { $0.event == "ps" && $0.name == "Ledger" }
        #expect(working.state == "background")
        #expect(working.fields["openBackgroundTasks"] as? Int == 1)
        let left = try #require(working.fields["backgroundTimeRemainingSeconds"] as? Double)
        #expect(left > 25 && left <= 30)
        try host.waitFor("Ledger", "suspended")
        host.send("wake Ledger")
        let suspendedAgain = try host.waitFor("Ledger", "suspended", occurrence: 2)
        host.send("ps")
        let status = try host.waitFor("ps when suspended", occurrence: 2) { $0.event == "ps" && $0.name == "Ledger" }
        #expect(status.state == "suspended")
        #expect(status.pid == working.pid)
        #expect(status.fields["backgroundWakeups"] as? Int == 1)
        #expect(status.fields["violations"] as? Int == 0)
        #expect(status.fields["openBackgroundTasks"] as? Int == 0)
        #expect(status.fields["backgroundTimeRemainingSeconds"] == nil)
        let memory = try #require(status.fields["memoryBytes"] as? Int)
        #expect(memory >= 30 * 1_048_576 && memory < 80 * 1_048_576)
        #expect(try #require(status.fields["peakMemoryBytes"] as? Int) >= memory)
        #expect(try #require(status.fields["cpuForegroundSeconds"] as? Double) > 0)
        // Counted from its last change of state (its second suspension), not from its launch.
        let inState = try #require(status.fields["timeInStateSeconds"] as? Double)
        let sinceSuspended = Date().timeIntervalSince(try #require(suspendedAgain.time))
        #expect(inState > 0 && inState < sinceSuspended + 0.1, "\(inState) s in its state, suspended \(sinceSuspended) s ago")

        host.send("terminate Ledger")
        let end = try host.waitFor("Ledger", "terminated")
        #expect(end.kind == "force-quit")
        let usage = try #require(try Report(end)["usage"] as? [String: Any])
        #expect(usage["memoryBytes"] as? Int == memory)
        #expect(usage["backgroundWakeups"] as? Int == 1)
        #expect(usage["violations"] as? Int == 0)
        #expect(try #require(usage["peakMemoryBytes"] as? Int) >= memory)
        #expect(try #require(usage["cpuForegroundSeconds"] as? Double) > 0)
        // One vocabulary: every figure of ps is in the report's usage under the same key.
        let figures = Set(status.fields.keys).subtracting(["event", "time", "app", "name", "pid", "state", "snapshot"])
        #expect(figures.count >= 10)
        #expect(figures.isSubset(of: Set(usage.keys)), "ps keys missing from usage: \(figures.subtracting(usage.keys).sorted())")
        #expect(status.fields["app"] as? String == "test.ledger")
        // The host's own events carry app too (null), and started says how the host works as fields.
        let started = try host.waitFor("started") { $0.event == "started" }
        #expect(started.fields.keys.contains("app") && started.fields["app"] is NSNull)
        for key in ["suspension", "sandbox", "memory", "storage", "instance", "stateDirectory"] {
            #expect(started.fields[key] is String, "started has \(key)")
        }
        #expect(started.fields["stateDirectory"] as? String == scratch.stateDirectory.path)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
