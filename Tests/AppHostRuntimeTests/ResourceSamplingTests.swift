#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import AppHostRuntime

/// What ResourceMonitor's samples mean, on a virtual clock: the memory limit where no cgroup holds
/// an app, CPU in the background over its share of the window (EXC_RESOURCE), the memory budget
/// all apps share, and when the sampler runs.
@Suite struct ResourceSamplingTests {
    private let start = HostInstant(nanoseconds: 1_000_000_000)
    private let mebibyte: UInt64 = 1 << 20
    private let app = AppID(index: 4)

    private func monitor(_ policy: Policy = Policy(), budget: UInt64 = 4 << 30) -> ResourceMonitor {
        ResourceMonitor(budget: budget, policy: policy, sharedResources: SharedResourceCheck(groupsDirectory: "/nonexistent", declared: []))
    }

    private func sample(
        _ id: AppID, _ state: AppState, memory: UInt64 = 0, cpu: Duration? = nil, inForeground: Bool = false,
        group: Bool = false, suspending: Bool = false
    ) -> ResourceMonitor.Sample {
        .init(id: id, state: state, inForeground: inForeground, memory: memory, limitedByGroup: group, suspending: suspending, cpu: cpu)
    }

    private var cpuPolicy: Policy {
        var policy = Policy()
        policy.backgroundCPULimit = 50
        policy.backgroundCPUWindow = .seconds(10)
        return policy
    }

    /// The background-CPU kill: more than the policy's share of a core over the window, and
    /// not a sample at it.
    @Test func backgroundCPUOverItsShareOfTheWindowEndsTheApp() {
        let resources = monitor(cpuPolicy)
        resources.stateChanged(app, to: .background, cpu: .seconds(100), now: start)
        #expect(resources.sample([sample(app, .background, cpu: .seconds(105))], now: start + .seconds(10)) == [], "50 %: allowed")
        let effects = resources.sample([sample(app, .background, cpu: .milliseconds(110_001))], now: start + .seconds(20))
        guard case .end(let id, let termination)? = effects.first, effects.count == 1 else {
            Issue.record("no end after 50 % and a millisecond of a core: \(effects)")
            return
        }
        #expect(id == app && termination.kind == .cpuResource)
        #expect(termination.reason.hasPrefix("used 5.00 s of CPU in 10.00 s in the background"))
    }

    /// CPU is held against an app only in the background, from when it last entered it, and not
    /// while it is being suspended.
    @Test func cpuCountsOnlyInTheBackgroundSinceItLastEnteredIt() {
        let resources = monitor(cpuPolicy)
        resources.stateChanged(app, to: .background, cpu: .zero, now: start)
        #expect(resources.sample([sample(app, .background, cpu: .seconds(9), suspending: true)], now: start + .seconds(10)) == [])
        #expect(resources.sample([sample(app, .active, cpu: .seconds(9), inForeground: true)], now: start + .seconds(10)) == [])
        resources.stateChanged(app, to: .suspended, cpu: nil, now: start + .seconds(10))
        #expect(resources.sample([sample(app, .background, cpu: .seconds(9))], now: start + .seconds(10)) == [], "no window once suspended")
        resources.stateChanged(app, to: .background, cpu: .seconds(9), now: start + .seconds(20))
        #expect(resources.sample([sample(app, .background, cpu: .seconds(14))], now: start + .seconds(30)) == [], "measured from its return")
        #expect(resources.sample([sample(app, .background, cpu: .seconds(20))], now: start + .seconds(31)).count == 1)
    }

    /// The memory-budget kill's threshold: all apps together over the budget begin pressure;
    /// at it they do not.
    @Test func theAppsTogetherOverTheBudgetBeginPressure() {
        let resources = monitor(budget: 100 * mebibyte)
        let other = AppID(index: 5)
        #expect(resources.sample([sample(app, .suspended, memory: 60 * mebibyte), sample(other, .active, memory: 40 * mebibyte, inForeground: true)], now: start) == [])
        #expect(resources.sample([sample(app, .suspended, memory: 60 * mebibyte), sample(other, .active, memory: 40 * mebibyte + 1, inForeground: true)], now: start)
            == [.beginPressure(target: 100 * mebibyte, usage: 100 * mebibyte + 1, cause: "over the memory budget")])
    }

    /// Memory pressure warns the apps that run and can hear it, then waits the policy's grace.
    @Test func pressureWarnsTheRunningAppsWhoseProcessStartedThenWaitsItsGrace() {
        var policy = Policy()
        policy.memoryWarningGrace = .seconds(3)
        let resources = monitor(policy)
        let ids = (0..<4).map { AppID(index: $0) }
        let warned = resources.beginPressure(
            target: 10 * mebibyte, cause: "memory-pressure", now: start, sparingRunningApps: false,
            apps: [.init(id: ids[0], state: .suspended, starting: false), .init(id: ids[1], state: .background, starting: false),
                   .init(id: ids[2], state: .launching, starting: true), .init(id: ids[3], state: .active, starting: false)])
        #expect(warned == [ids[1], ids[3]])
        #expect(resources.pressureDeadline == start + .seconds(3))
    }

    /// Where no memory cgroup holds an app, a sample over its state's limit ends it (a
    /// suspended app is never measured over one: it does not allocate).
    @Test func aSampleOverItsStatesLimitEndsAnAppNoCgroupHolds() throws {
        var policy = Policy()
        policy.foregroundMemoryLimit = 200 * mebibyte
        policy.backgroundMemoryLimit = 100 * mebibyte
        let resources = monitor(policy)
        #expect(resources.sample([sample(app, .active, memory: 200 * mebibyte, inForeground: true)], now: start) == [])
        #expect(resources.sample([sample(app, .active, memory: 300 * mebibyte, inForeground: true, group: true)], now: start) == [], "the cgroup's to stop")
        #expect(resources.sample([sample(app, .suspended, memory: 300 * mebibyte)], now: start) == [])
        let background = resources.sample([sample(app, .background, memory: 150 * mebibyte)], now: start)
        #expect(background == [.end(app, ResourceRules.limitBySampling(
            memory: 150 * mebibyte, limit: (100 * mebibyte, "background"), interval: policy.resourceSampleInterval)!)])
        let ends = background.compactMap { if case .end(_, let termination) = $0 { termination } else { nil } }
        let termination = try #require(ends.first, "the app is ended: \(background)")
        #expect(termination.kind == .perProcessLimit && termination.reason.contains("over its background memory limit of"))
    }

    /// The one rule for an app's limit, at its spawn (launching) and after.
    @Test func theLimitAtSpawnIsTheOneOfWhereTheAppLaunches() {
        let policy = Policy()
        let resources = monitor(policy)
        #expect(resources.memoryLimit(state: .launching, inForeground: true) == (policy.foregroundMemoryLimit, "foreground"))
        #expect(resources.memoryLimit(state: .launching, inForeground: false) == (policy.backgroundMemoryLimit, "background"))
        #expect(resources.memoryLimit(state: .suspended, inForeground: false).bytes == policy.backgroundMemoryLimit)
        #expect(resources.memoryLimit(state: .inactive, inForeground: true).bytes == policy.foregroundMemoryLimit)
    }

    /// The violation limit, the policy's: refused calls end the app when they reach it (and
    /// never without one); a dangerous call ends it at once.
    @Test func refusedCallsEndTheAppAtThePolicysLimit() {
        var policy = Policy()
        policy.maximumViolations = 3
        let resources = monitor(policy)
        #expect(resources.refusedCall("socket(…)", dangerous: false, state: .background, count: 2) == nil)
        let end = resources.refusedCall("socket(…)", dangerous: false, state: .background, count: 3)
        #expect(end?.kind == .sandboxViolations && end?.reason == "made 3 refused system calls (the policy allows 3); the last: socket(…)")
        policy.maximumViolations = nil
        #expect(monitor(policy).refusedCall("socket(…)", dangerous: false, state: .active, count: 1000) == nil)
        #expect(monitor(policy).refusedCall("ptrace(…)", dangerous: true, state: .active, count: 1)?.kind == .forbiddenSyscall)
    }

    /// 0xdead10cc: a lock in an app-group container, held by the process the host would
    /// suspend, ends it, naming the lock; once released, nothing does. (This test's own process
    /// takes the lock.)
    @Test func aLockInAnAppGroupHeldAtSuspensionEndsTheApp() throws {
        let files = TemporaryFiles()
        let groups = try files.url("groups").resolvingSymlinksInPath()
        try FileManager.default.createDirectory(at: groups.appendingPathComponent("group.example"), withIntermediateDirectories: true)
        let path = groups.appendingPathComponent("group.example/db").path
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        let resources = ResourceMonitor(budget: 1 << 30, policy: Policy(), sharedResources: SharedResourceCheck(groupsDirectory: groups.path, declared: []))
        #expect(resources.heldAtSuspension(by: [getpid()]) == nil)
        try #require(flock(fd, LOCK_EX) == 0)
        let held = try #require(resources.heldAtSuspension(by: [getpid()]))
        #expect(held.held.map(\.path) == [path])
        #expect(held.end.kind == .sharedResource && held.end.code == TerminationCode.sharedResourceHeld.rawValue)
        #expect(held.end.reason == "held a flock write lock on \(path) when it would have been suspended")
        flock(fd, LOCK_UN)
        #expect(resources.heldAtSuspension(by: [getpid()]) == nil)
    }

    /// Entering a running state: a resumed app keeps its background limit; a limit its group
    /// holds it to already is only measured again later (if it was measured before); otherwise
    /// the state's limit is applied.
    @Test func enteringAStateAppliesItsLimitUnlessItHoldsAlready() {
        let policy = Policy()
        let resources = monitor(policy)
        let background = policy.backgroundMemoryLimit, foreground = policy.foregroundMemoryLimit
        #expect(resources.limitStep(entering: .background, from: .suspended, inForeground: false, groupLimit: nil, measuredBefore: true) == .keep)
        #expect(resources.limitStep(entering: .background, from: .inactive, inForeground: false, groupLimit: foreground, measuredBefore: true)
            == .apply(bytes: background, label: "background"))
        #expect(resources.limitStep(entering: .active, from: .inactive, inForeground: true, groupLimit: foreground, measuredBefore: true) == .measureLater)
        #expect(resources.limitStep(entering: .active, from: .inactive, inForeground: true, groupLimit: foreground, measuredBefore: false)
            == .apply(bytes: foreground, label: "foreground"), "never measured: its report needs figures")
        #expect(resources.limitStep(entering: .inactive, from: .launching, inForeground: true, groupLimit: nil, measuredBefore: true)
            == .apply(bytes: foreground, label: "foreground"), "no group: the limit is sampled, and checked now")
    }

    /// The sampler runs only while some app runs.
    @Test func theSamplerRunsOnlyWhileAnAppRuns() {
        let resources = monitor()
        #expect(resources.nextSample(anyRunning: true, now: start) == start + Policy().resourceSampleInterval)
        #expect(resources.nextSample(anyRunning: false, now: start) == nil)
    }
}
