import Testing
@testable import AppHostRuntime

/// The resource rules, without processes: measurements in, a termination or a victim out.
@Suite struct ResourceRuleTests {
    private let t0 = HostInstant(nanoseconds: 1_000_000_000)

    @Test func holdingNothingSharedIsNoTermination() {
        #expect(ResourceRules.sharedResourceTermination(held: []) == nil)
    }

    @Test func aHeldLockIsDead10ccNamingTheFirstAndCountingTheRest() throws {
        let lock = try #require(FileLock(fdinfoLine: "lock:\t1: POSIX  ADVISORY  WRITE 4242 fe:00:1234 0 EOF"))
        let held = [
            HeldResource(what: .lock(lock), path: "/state/groups/group.a/db.sqlite", pid: 10, fd: 5),
            HeldResource(what: .sharedResource(declared: "/dev/camera"), path: "/dev/camera", pid: 10, fd: 6),
        ]
        let termination = try #require(ResourceRules.sharedResourceTermination(held: held))
        #expect(termination.code == 0xdead_10cc)
        #expect(termination.namespace == .runningBoard)
        #expect(termination.reason == "held a POSIX write lock on /state/groups/group.a/db.sqlite when it would have been suspended (and 1 more, listed in the report)")
    }

    @Test func theLimitFollowsTheState() {
        var policy = Policy()
        policy.foregroundMemoryLimit = 100 << 20
        policy.backgroundMemoryLimit = 10 << 20
        #expect(ResourceRules.memoryLimit(state: .active, inForeground: true, policy: policy).label == "foreground")
        #expect(ResourceRules.memoryLimit(state: .inactive, inForeground: false, policy: policy).label == "foreground")
        #expect(ResourceRules.memoryLimit(state: .launching, inForeground: true, policy: policy).label == "foreground")
        #expect(ResourceRules.memoryLimit(state: .launching, inForeground: false, policy: policy).bytes == 10 << 20)
        #expect(ResourceRules.memoryLimit(state: .background, inForeground: false, policy: policy).bytes == 10 << 20)
        #expect(ResourceRules.memoryLimit(state: .suspended, inForeground: false, policy: policy).label == "background")
    }

    @Test func enteringAStateOverItsLimitEndsTheAppThen() {
        #expect(ResourceRules.limitOnEntering("background", limit: 10 << 20, memory: 5 << 20, peak: 5 << 20, fits: true) == nil)
        let over = ResourceRules.limitOnEntering("background", limit: 10 << 20, memory: 12 << 20, peak: 20 << 20, fits: false)
        #expect(over?.kind == .perProcessLimit)
        #expect(over?.namespace == .jetsam)
        #expect(over?.reason == "used 12.0 MiB on entering the background, over its background memory limit of 10.0 MiB (peak 20.0 MiB)")
    }

    @Test func aSampleOverTheLimitEndsTheAppAndOneAtItDoesNot() {
        let limit = (bytes: UInt64(64 << 20), label: "foreground")
        #expect(ResourceRules.limitBySampling(memory: 64 << 20, limit: limit, interval: .milliseconds(250)) == nil)
        #expect(ResourceRules.limitBySampling(memory: (64 << 20) + 1, limit: limit, interval: .milliseconds(250))?.reason
            == "used 64.0 MiB, over its foreground memory limit of 64.0 MiB (measured every 0.25 s)")
    }

    @Test func jetsamEndsSuspendedAppsLeastRecentlyUsedFirstThenBackgroundThenForeground() {
        func candidate(_ name: String, _ state: AppState, foreground: Bool = false, since seconds: UInt64) -> ResourceRules.Candidate<String> {
            .init(id: name, name: name, state: state, inForeground: foreground, since: HostInstant(nanoseconds: seconds * 1_000_000_000), memory: 1 << 20)
        }
        var candidates = [
            candidate("Front", .active, foreground: true, since: 1),
            candidate("Runner", .background, since: 2),
            candidate("Newer", .suspended, since: 9),
            candidate("Older", .suspended, since: 5),
        ]
        var order: [String] = []
        while let (victim, _) = ResourceRules.nextVictim(among: candidates) {
            order.append(victim.id)
            candidates.removeAll { $0.id == victim.id }
        }
        #expect(order == ["Older", "Newer", "Runner", "Front"])
    }

    @Test func backgroundCPUOverItsShareOfTheWindowIsExcResource() {
        var policy = Policy()
        policy.backgroundCPULimit = 50
        policy.backgroundCPUWindow = .seconds(10)
        var window = ResourceRules.CPUWindow(startingAt: t0, total: .zero)
        // 5 s of CPU in 10 s is exactly 50 %: allowed.
        #expect(window.add(.seconds(5), at: t0 + .seconds(10), policy: policy) == nil)
        // Later samples measure from the newest one at or before the window's start.
        #expect(window.add(.seconds(5), at: t0 + .seconds(20), policy: policy) == nil)
        let over = window.add(.milliseconds(10_001), at: t0 + .seconds(30), policy: policy)
        #expect(over?.kind == .cpuResource)
        #expect(over?.reason == "used 5.00 s of CPU in 10.00 s in the background (50 % of a core); the limit is 50 % of a core over 10.0 s")
    }
}

/// Memory pressure as a pure state machine on a virtual clock.
@Suite struct MemoryPressureTests {
    private let t0 = HostInstant(nanoseconds: 1_000_000_000)

    private func candidates(_ names: [String]) -> [ResourceRules.Candidate<String>] {
        names.enumerated().map { index, name in
            .init(id: name, name: name, state: .suspended, inForeground: false, since: HostInstant(nanoseconds: UInt64(index + 1)), memory: 100 << 20)
        }
    }

    @Test func appsAreEndedOnlyAfterTheGraceAndOneAtATime() {
        var episode = MemoryPressure<String>(target: 150 << 20, cause: "over the memory budget", now: t0, grace: .seconds(2))
        #expect(episode.deadline == t0 + .seconds(2))
        #expect(episode.step(now: t0 + .milliseconds(1999), usage: 300 << 20, candidates: candidates(["A", "B", "C"])) == .wait)
        guard case .end("A", let termination) = episode.step(now: t0 + .seconds(2), usage: 300 << 20, candidates: candidates(["A", "B", "C"])) else {
            Issue.record("the least recently used suspended app is ended first")
            return
        }
        #expect(termination.kind == .pageShortage)
        #expect(episode.deadline == nil, "no more waiting on time: on the victim's end")
        #expect(episode.step(now: t0 + .seconds(3), usage: 300 << 20, candidates: candidates(["A", "B", "C"])) == .wait, "one at a time")
        episode.victimEnded("A")
        #expect(episode.step(now: t0 + .seconds(3), usage: 200 << 20, candidates: candidates(["B", "C"])) == .end("B", ResourceRules.pageShortage(
            cause: "over the memory budget", usage: 200 << 20, target: 150 << 20, memory: 100 << 20, position: "suspended, least recently used first")))
        episode.victimEnded("B")
        #expect(episode.step(now: t0 + .seconds(3), usage: 100 << 20, candidates: candidates(["C"])) == .over("ended A, B; the apps use 100.0 MiB, within 150.0 MiB"))
    }

    @Test func aWarningThatFreesEnoughEndsNoApp() {
        var episode = MemoryPressure<String>(target: 150 << 20, cause: "memory-pressure", now: t0, grace: .seconds(2))
        #expect(episode.step(now: t0 + .seconds(2), usage: 100 << 20, candidates: candidates(["A"])) == .over("relieved; the apps use 100.0 MiB, within 150.0 MiB"))
    }

    /// Regression: `memory-pressure` without a target took the running apps' memory as the
    /// target, so a foreground app that grew by a page after the command was ended with the
    /// suspended ones; it ends only suspended apps (README: "no running one").
    @Test func withoutATargetOnlySuspendedAppsAreEnded() {
        var episode = MemoryPressure<String>(target: 100 << 20, cause: "memory-pressure", now: t0, grace: .zero, sparesRunningApps: true)
        let front = ResourceRules.Candidate(id: "Front", name: "Front", state: .active, inForeground: true, since: t0, memory: 100 << 20 + 4096)
        guard case .end("A", _) = episode.step(now: t0, usage: 200 << 20 + 4096, candidates: candidates(["A"]) + [front]) else {
            Issue.record("the suspended app is ended first")
            return
        }
        episode.victimEnded("A")
        #expect(episode.step(now: t0, usage: 100 << 20 + 4096, candidates: [front])
            == .over("ended A; the apps use 100.0 MiB, still over 100.0 MiB: no app is left to end"))
        // A second cause (the budget) may end running apps again.
        episode.tighten(to: 50 << 20)
        #expect(episode.step(now: t0, usage: 100 << 20, candidates: [front]) == .end("Front", ResourceRules.pageShortage(
            cause: "memory-pressure", usage: 100 << 20, target: 50 << 20, memory: 100 << 20 + 4096, position: "in the foreground, the last considered")))
    }

    @Test func withNobodyLeftToEndItSaysSo() {
        var episode = MemoryPressure<String>(target: 50 << 20, cause: "memory-pressure", now: t0, grace: .zero)
        #expect(episode.step(now: t0, usage: 100 << 20, candidates: []) == .over("relieved; the apps use 100.0 MiB, still over 50.0 MiB: no app is left to end"))
    }
}

/// HostCapacity: the bound is the tighter of the descriptor and the task limits, named.
@Suite struct HostCapacityTests {
    @Test func theTighterLimitBoundsAndIsNamed() throws {
        let byFiles = HostCapacity(descriptors: 20_000, openAtStart: 40, pidMax: 4_194_304, tasksAtStart: 300)
        #expect(byFiles.apps == (20_000 - 40 - HostCapacity.descriptorReserve) / HostCapacity.descriptorsPerApp)
        #expect(byFiles.boundBy == "RLIMIT_NOFILE 20000 (\(HostCapacity.descriptorsPerApp) descriptors an app)")
        let byTasks = HostCapacity(descriptors: 1_048_576, openAtStart: 40, pidMax: 32_768, tasksAtStart: 300)
        #expect(byTasks.apps == (32_768 - 300 - HostCapacity.descriptorReserve) / HostCapacity.tasksPerApp)
        #expect(byTasks.boundBy == "kernel.pid_max 32768 (\(HostCapacity.tasksPerApp) tasks an app)")
        #expect(try #require(byTasks.refusal(launching: "Notes", installed: byTasks.apps + 1, running: { byTasks.apps }))
            .hasPrefix("cannot launch Notes: \(byTasks.apps) apps run, the most this host can hold under kernel.pid_max 32768"))
        #expect(byTasks.refusal(launching: "Notes", installed: byTasks.apps + 1, running: { byTasks.apps - 1 }) == nil, "one place left")
        #expect(byTasks.refusal(launching: "Notes", installed: byTasks.apps, running: { Issue.record("counted below the bound"); return 0 }) == nil)
        #expect(HostCapacity(descriptors: 100, openAtStart: 40, pidMax: 32_768, tasksAtStart: 300).apps == 0, "never negative")
    }
}
