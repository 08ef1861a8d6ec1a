import AppHostSystem
import Foundation
import Testing

/// Memory limits and memory pressure, as iOS's jetsam, against real app processes that allocate
/// (and touch) real memory: the Probe's `allocateMiB`, `growMiB` and `hogMiB`.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct MemoryTests {
    /// Whether the host can create memory cgroups here (as `apphost doctor` reports).
    static let hasMemoryCgroup: Bool = {
        guard let result = try? runApphost(["doctor"]) else { return false }
        return result.output.contains("yes  cgroup v1 memory controller")
    }()

    static let mebibyte = 1_048_576
    /// Measure often, so that the tests take fractions of a second.
    static let fast = ["--resource-sample-interval", "0.02"]


    @Test(.enabled(if: hasMemoryCgroup, "needs a writable cgroup v1 memory controller (see apphost doctor)"))
    func anAppOverItsForegroundLimitIsStoppedByItsMemoryCgroup() throws {
        try hogIsEndedAsPerProcessLimit(enforcement: "cgroup")
    }

    @Test func anAppOverItsForegroundLimitIsEndedBySampling() throws {
        try hogIsEndedAsPerProcessLimit(enforcement: "sampling")
    }

    private func hogIsEndedAsPerProcessLimit(enforcement: String) throws {
        let scratch = try Scratch()
        let hog = try scratch.bundle("Hog", behavior: ["hogMiB": 4])
        let host = try HostSession([hog], scratch: scratch, arguments: Self.fast + [
            "--memory-enforcement", enforcement, "--foreground-memory-limit", "64",
        ])
        let end = try host.waitFor("Hog", "terminated")
        #expect(end.namespace == "JETSAM")
        #expect(end.kind == "per-process-limit")
        let reason = try #require(end.reason)
        let usage = try #require(try Report(end)["usage"] as? [String: Any])
        let peak = try #require(usage["peakMemoryBytes"] as? Int)
        if enforcement == "cgroup" {
            // The kernel stopped it at the limit. The group counts what the app allocated after
            // it joined, so its resident memory may exceed the limit by its first few pages.
            #expect(reason.hasPrefix("reached its foreground memory limit of 64.0 MiB (memory cgroup; "))
            #expect(peak > 48 * Self.mebibyte && peak <= 72 * Self.mebibyte)
        } else {
            #expect(reason.hasPrefix("used "))
            #expect(reason.hasSuffix(", over its foreground memory limit of 64.0 MiB (measured every 0.02 s)"))
            #expect(peak > 64 * Self.mebibyte)
        }
        #expect(!scratch.recorded("Hog").contains { $0.hasPrefix("willTerminate") })
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.jetsam)
    }

    @Test func anAppOverItsBackgroundLimitIsEndedWhenItLeavesTheForeground() throws {
        let scratch = try Scratch()
        let big = try scratch.bundle("Big", behavior: ["allocateMiB": 100])
        let small = try scratch.bundle("Small", behavior: ["allocateMiB": 20])
        let host = try HostSession([big, small], scratch: scratch, arguments: Self.fast + [
            "--foreground-memory-limit", "512", "--background-memory-limit", "64",
        ])
        try host.waitFor("Big", "didBecomeActive")
        host.send("open Small")
        let end = try host.waitFor("Big", "terminated")
        #expect(end.kind == "per-process-limit")
        let reason = try #require(end.reason)
        #expect(reason.hasPrefix("used 10"))
        #expect(reason.contains(" MiB on entering the background, over its background memory limit of 64.0 MiB (peak "))
        #expect(!host.allEvents.contains { $0.name == "Big" && $0.event == "suspended" })
        try host.waitFor("Small", "didBecomeActive")
        host.send("home")
        try host.waitFor("Small", "suspended")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.jetsam)
    }

    @Test func overTheBudgetSuspendedAppsAreEndedLeastRecentlyUsedFirst() throws {
        let scratch = try Scratch()
        let names = ["First", "Second", "Third"]
        let bundles = try names.map { try scratch.bundle($0, behavior: ["allocateMiB": 100]) }
        // Grows to 250 MiB once active, and keeps it despite the memory warning.
        let grower = try scratch.bundle("Grower", behavior: ["growMiB": ["in": "didBecomeActive", "step": 50, "every": 0.01, "upTo": 250]])
        // About 306 MiB suspended plus 252 MiB growing: over 430 MiB. Ending First leaves about
        // 456 MiB, still over; ending Second too leaves about 354 MiB. The grace is long enough
        // for Grower to have grown by its end on a loaded machine (its 250 MiB take 50 ms alone):
        // grown less, it would be within the budget once First is ended, and Second would be
        // ended by a second episode.
        let host = try HostSession(bundles + [grower], scratch: scratch, arguments: Self.fast + [
            "--memory-budget", "430", "--memory-warning-grace", "4",
        ])
        try host.waitFor("First", "didBecomeActive")
        for (previous, next) in [("First", "Second"), ("Second", "Third"), ("Third", "Grower")] {
            host.send("open \(next)")
            try host.waitFor(previous, "suspended")
            try host.waitFor(next, "didBecomeActive")
        }
        let pressure = try host.waitFor("apphost memoryPressure") { $0.event == "memoryPressure" }
        #expect(try #require(pressure.detail).contains("over the memory budget: the apps use "))
        try host.waitFor("Grower", "didReceiveMemoryWarning")
        try host.waitFor("Second", "terminated")
        let summary = try host.waitFor("apphost memoryPressure #2", occurrence: 2) { $0.event == "memoryPressure" }
        #expect(try #require(summary.detail).hasPrefix("ended First, Second; the apps use "))

        let ends = host.allEvents.filter { $0.event == "terminated" }
        #expect(ends.map(\.name) == ["First", "Second"])
        for end in ends {
            #expect(end.namespace == "JETSAM")
            #expect(end.kind == "vm-pageshortage")
            #expect(try #require(end.reason).hasSuffix("(suspended, least recently used first)"))
            // No callback: the last thing each recorded was going to the background.
            #expect(scratch.callbacks(end.name ?? "").last == "didEnterBackground background")
        }
        #expect(scratch.callbacks("Grower").contains("didReceiveMemoryWarning active"))
        host.send("ps")
        let third = try host.waitFor("ps of Third") { $0.event == "ps" && $0.name == "Third" }
        #expect(third.state == "suspended")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.jetsam)
    }

    @Test func memoryPressureOnDemandEndsEverySuspendedAppAndNoRunningOne() throws {
        let scratch = try Scratch()
        let bundles = try ["Older", "Newer", "Front"].map { try scratch.bundle($0) }
        let host = try HostSession(bundles, scratch: scratch, arguments: ["--memory-warning-grace", "0.2"])
        try host.waitFor("Older", "didBecomeActive")
        host.send("open Newer")
        try host.waitFor("Older", "suspended")
        host.send("open Front")
        try host.waitFor("Newer", "suspended")
        try host.waitFor("Front", "didBecomeActive")
        host.send("memory-pressure")
        try host.waitFor("Front", "didReceiveMemoryWarning")
        try host.waitFor("Newer", "terminated")
        #expect(host.allEvents.filter { $0.event == "terminated" }.map(\.name) == ["Older", "Newer"])
        #expect(host.allEvents.filter { $0.event == "terminated" }.allSatisfy { $0.kind == "vm-pageshortage" })
        host.send("ps")
        let front = try host.waitFor("ps of Front") { $0.event == "ps" && $0.name == "Front" }
        #expect(front.state == "active")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.jetsam)
    }
}
