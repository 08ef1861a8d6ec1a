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

    /// A live app as the memory-pressure rules are told of it.
    private func live(_ index: Int, _ state: AppState, _ mebibytes: UInt64 = 0, starting: Bool = false, inForeground: Bool = false) -> ResourceMonitor.LiveApp {
        .init(id: AppID(index: index), name: "App\(index)", state: state, inForeground: inForeground, starting: starting,
              memory: mebibytes * mebibyte, since: start)
    }

    /// Memory pressure disconnects the background scenes first, says so, then warns the apps
    /// that run and can hear it, in order, and waits the policy's grace.
    @Test func pressureWarnsTheRunningAppsWhoseProcessStartedThenWaitsItsGrace() {
        var policy = Policy()
        policy.memoryWarningGrace = .seconds(3)
        let resources = monitor(policy, budget: 100 * mebibyte)
        let effects = resources.beginPressure(
            target: 10 * mebibyte, usage: 120 * mebibyte, cause: "memory-pressure", now: start,
            apps: [live(0, .suspended), live(1, .background), live(2, .launching, starting: true), live(3, .active, inForeground: true)])
        let notice = PressureNotice(
            cause: "memory-pressure", usage: 120 * mebibyte, budget: 100 * mebibyte, warned: ["App1", "App3"], grace: .seconds(3), target: 10 * mebibyte)
        #expect(effects == [.disconnectBackgroundScenes, .announce(notice), .warn(AppID(index: 1)), .warn(AppID(index: 3))])
        #expect(resources.pressureDeadline == start + .seconds(3))
    }

    /// The line that announces an episode, word for word, with and without scenes disconnected
    /// and apps to warn.
    @Test func theAnnouncementSaysTheScenesDisconnectedAndTheAppsWarned() {
        let notice = PressureNotice(
            cause: "over the memory budget", usage: 120 * mebibyte, budget: 100 * mebibyte, warned: ["Notes", "Maps"], grace: .seconds(2), target: 100 * mebibyte)
        #expect(notice.line(disconnected: ["Notes (A, B)"]) == "over the memory budget: the apps use 120.0 MiB (budget 100.0 MiB); "
            + "memory warning to Notes, Maps; background scenes disconnected: Notes (A, B); apps are ended in 2.0 s unless usage falls to 100.0 MiB")
        var nobody = notice
        nobody.warned = []
        #expect(nobody.line(disconnected: []) == "over the memory budget: the apps use 120.0 MiB (budget 100.0 MiB); "
            + "no app is running to warn; apps are ended in 2.0 s unless usage falls to 100.0 MiB")
    }

    /// `memory-pressure` without a target comes down to what the running apps use and spares
    /// them (only suspended apps are ended); with one, it says its target and ends any app.
    @Test func aPressureCommandsDefaultTargetIsWhatTheRunningAppsUse() {
        let resources = monitor(budget: 1000 * mebibyte)
        let apps = [live(0, .suspended, 60), live(1, .active, 30, inForeground: true), live(2, .background, 20)]
        let effects = resources.pressureCommand(target: nil, now: start, apps: apps)
        guard case .announce(let notice)? = effects.dropFirst().first else {
            Issue.record("no announcement: \(effects)")
            return
        }
        #expect(notice.cause == "memory-pressure" && notice.target == 50 * mebibyte && notice.usage == 110 * mebibyte)
        let grown = [live(0, .suspended, 60), live(1, .active, 31, inForeground: true), live(2, .background, 20)]
        #expect(resources.stepPressure(now: start + .seconds(2), apps: grown).flatMap(ended) == AppID(index: 0))
        #expect(resources.appEnded(AppID(index: 0)))
        #expect(resources.stepPressure(now: start + .seconds(2), apps: Array(grown.dropFirst()))
            == .over("ended App0; the apps use 51.0 MiB, still over 50.0 MiB: no app is left to end"), "the running apps are spared")

        let targeted = monitor(budget: 1000 * mebibyte)
        guard case .announce(let given)? = targeted.pressureCommand(target: 40 * mebibyte, now: start, apps: apps).dropFirst().first else {
            Issue.record("no announcement with a target")
            return
        }
        #expect(given.cause == "memory-pressure 40.0 MiB" && given.target == 40 * mebibyte)
        #expect(targeted.stepPressure(now: start + .seconds(2), apps: apps).flatMap(ended) == AppID(index: 0))
        _ = targeted.appEnded(AppID(index: 0))
        #expect(targeted.stepPressure(now: start + .seconds(2), apps: Array(apps.dropFirst())).flatMap(ended) == AppID(index: 2), "a running app too")
    }

    /// The app a step ends, if it ends one.
    private func ended(_ step: MemoryPressure<AppID>.Step) -> AppID? {
        guard case .end(let id, _) = step else { return nil }
        return id
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

    /// Holding an app to the limit it enters: one that fits has its group brought down to it;
    /// one over it is ended (its group untouched), and so is one whose group refuses.
    @Test func anAppEnteringALimitFitsOrIsEnded() {
        let resources = monitor()
        #expect(resources.holdToLimit(bytes: 100 * mebibyte, label: "background", memory: 100 * mebibyte, peak: 150 * mebibyte)
            == .setGroupLimit(100 * mebibyte))
        let over = "used 101.0 MiB on entering the background, over its background memory limit of 100.0 MiB (peak 150.0 MiB)"
        #expect(resources.holdToLimit(bytes: 100 * mebibyte, label: "background", memory: 101 * mebibyte, peak: 150 * mebibyte)
            == .end(Termination(kind: .perProcessLimit, namespace: .jetsam, code: nil, reason: over)))
        let refused = resources.groupRefused(bytes: 100 * mebibyte, label: "foreground", memory: 90 * mebibyte, peak: 95 * mebibyte)
        #expect(refused == Termination(
            kind: .perProcessLimit, namespace: .jetsam, code: nil,
            reason: "used 90.0 MiB on entering the foreground, over its foreground memory limit of 100.0 MiB (peak 95.0 MiB)"))
    }

    /// An app whose memory cgroup ran out is ended, named by its group's limit and the label of
    /// the state it is in.
    @Test func aFullMemoryGroupEndsTheAppAtItsStatesLimit() {
        let resources = monitor()
        let background = resources.groupFull(state: .launching, inForeground: false, groupLimit: 256 * mebibyte, memory: 250 * mebibyte, peak: 256 * mebibyte)
        #expect(background == Termination(
            kind: .perProcessLimit, namespace: .jetsam, code: nil,
            reason: "reached its background memory limit of 256.0 MiB (memory cgroup; 250.0 MiB resident, peak 256.0 MiB)"))
        #expect(resources.groupFull(state: .active, inForeground: true, groupLimit: 1 << 30, memory: 0, peak: 0).reason.hasPrefix("reached its foreground memory limit of 1024.0 MiB"))
    }

    /// The sampler runs only while some app runs.
    @Test func theSamplerRunsOnlyWhileAnAppRuns() {
        let resources = monitor()
        #expect(resources.nextSample(anyRunning: true, now: start) == start + Policy().resourceSampleInterval)
        #expect(resources.nextSample(anyRunning: false, now: start) == nil)
    }
}
