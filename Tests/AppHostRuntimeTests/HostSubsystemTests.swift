import AppHostProtocol
import Dispatch
import Foundation
import Testing
@testable import AppHostRuntime

/// A clock the test sets.
private final class TestClock: HostClock, @unchecked Sendable {
    var now = HostInstant(nanoseconds: 1_000_000_000)
}

/// The host's one timer (HostTimers), on a virtual clock: `take` is called with the time.
@Suite struct HostTimersTests {
    private let clock = TestClock()
    private let queue = DispatchQueue(label: "test.timers")
    private func at(_ seconds: Double) -> HostInstant { HostInstant(nanoseconds: 1_000_000_000) + .seconds(double: seconds) }

    @Test func deadlinesComeDueEarliestFirstAndOnce() {
        let timers = HostTimers(queue: queue, clock: clock)
        timers.set(.scheduler, at: at(3))
        timers.set(.sample, at: at(1))
        timers.set(.route, at: at(2))
        #expect(timers.take(now: at(0.5)) == [])
        #expect(timers.take(now: at(2)) == [.sample, .route])
        #expect(timers.take(now: at(2)) == [], "each comes due once")
        #expect(timers.take(now: at(10)) == [.scheduler])
        #expect(timers.count == 0)
    }

    @Test func aMovedDeadlineComesDueAtItsNewTimeAndAClearedOneNever() {
        let timers = HostTimers(queue: queue, clock: clock)
        let run = RunID(app: AppID(index: 0), launch: 0)
        timers.set(.machine(run), at: at(1))
        timers.set(.machine(run), at: at(5))
        timers.set(.pressure, at: at(2))
        timers.set(.pressure, at: nil)
        #expect(timers.take(now: at(3)) == [], "moved later, and cleared")
        #expect(timers.take(now: at(5)) == [.machine(run)])
        timers.set(.machine(run), at: at(9))
        timers.set(.machine(run), at: at(6))
        #expect(timers.take(now: at(6)) == [.machine(run)], "moved sooner")
        #expect(timers.take(now: at(9)) == [])
    }

    /// A watchdog set and cleared at every callback leaves entries behind; the heap is rebuilt
    /// from what is set, and nothing set is lost.
    @Test func manyMovesKeepOnlyWhatIsSet() {
        let timers = HostTimers(queue: queue, clock: clock)
        for app in 0..<50 {
            let run = RunID(app: AppID(index: app), launch: 0)
            for step in 0..<200 { timers.set(.machine(run), at: at(Double(1000 + step))) }
            timers.set(.machine(run), at: app % 2 == 0 ? at(Double(app)) : nil)
        }
        #expect(timers.count == 25)
        let due = timers.take(now: at(100))
        #expect(due == (0..<50).filter { $0 % 2 == 0 }.map { .machine(RunID(app: AppID(index: $0), launch: 0)) })
        #expect(timers.take(now: at(5000)) == [])
    }

    /// On the queue, where the timers live (work asked for from elsewhere goes there first).
    @Test func workRunsWhenItsTimeComes() {
        let timers = HostTimers(queue: queue, clock: clock)
        nonisolated(unsafe) var ran: [String] = []
        queue.sync {
            timers.after(.seconds(2)) { ran.append("second") }
            timers.after(.seconds(1)) { ran.append("first") }
            for deadline in timers.take(now: clock.now + .seconds(1)) {
                if case .work(let number) = deadline { timers.run(number) }
            }
        }
        #expect(ran == ["first"])
        // Asked for off the queue: it is set once the queue has taken it.
        timers.after(.seconds(3)) { ran.append("third") }
        queue.sync {
            for deadline in timers.take(now: clock.now + .seconds(3)) {
                if case .work(let number) = deadline { timers.run(number) }
            }
        }
        #expect(ran == ["first", "second", "third"])
    }

    /// The Dispatch timer itself: armed for the earliest deadline, it fires on the queue.
    @Test func theTimerFiresForTheEarliestDeadline() async {
        // Touched only on the queue, where the timer fires.
        nonisolated(unsafe) let timers = HostTimers(queue: queue, clock: MonotonicClock())
        let fired: [HostDeadline] = await withCheckedContinuation { continuation in
            queue.async {
                timers.onFire {
                    let due = timers.take(now: MonotonicClock().now)
                    if !due.isEmpty { continuation.resume(returning: due) }
                    return true
                }
                timers.set(.scheduler, at: MonotonicClock().now + .seconds(3600))
                timers.set(.sample, at: MonotonicClock().now + .milliseconds(5))
            }
        }
        #expect(fired == [.sample])
    }
}

/// The installed apps and what their machines are (AppTable).
@Suite struct AppTableTests {
    private let files = TemporaryFiles()

    private func bundle(_ name: String, identifier: String) throws -> AppBundle {
        try files.bundle(name, identifier: identifier)
    }

    @Test func appsAreFoundByNameIdentifierAndIDInAnyCase() throws {
        let table = AppTable()
        let notes = try table.install(try bundle("Notes", identifier: "com.example.notes"))
        let weather = try table.install(try bundle("Weather", identifier: "com.example.weather"))
        #expect(notes.id == AppID(index: 0) && weather.id == AppID(index: 1))
        #expect(try table.record(named: "notes") === notes)
        #expect(try table.record(named: "COM.EXAMPLE.WEATHER") === weather)
        #expect(try table.record(named: "Weather.app") === weather)
        #expect(table[weather.id] === weather)
        #expect(table.records(identifiers: ["com.example.weather", "com.example.missing", "com.example.notes"]).map(\.id) == [notes.id, weather.id])
        #expect(throws: SupervisorError.self) { try table.record(named: "Wether") }
        do {
            _ = try table.record(named: "Wether")
        } catch {
            #expect(error.description == "no app named Wether; did you mean Weather? installed: Notes, Weather")
        }
    }

    @Test func twoAppsCannotShareAnIdentifier() throws {
        let table = AppTable()
        _ = try table.install(try bundle("Notes", identifier: "com.example.notes"))
        #expect(throws: SupervisorError.self) { try table.install(try bundle("Copy", identifier: "com.example.notes")) }
        #expect(table.count == 1)
    }

    /// The sets follow each machine: running while live and not suspended, in the foreground
    /// while there, unsettled between steps.
    @Test func theSetsFollowTheMachines() throws {
        let table = AppTable()
        let record = try table.install(try bundle("Notes", identifier: "com.example.notes"))
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        _ = record.begin(host.machine, now: host.now)
        table.follow(record)
        #expect(table.running == [record.id] && table.foreground == [record.id] && table.unsettled.isEmpty)
        // One app in the foreground: it leaves as another comes, or as the user goes home.
        #expect(table.leavingTheForeground(as: AppID(index: 1)) == [record.id])
        #expect(table.leavingTheForeground(as: nil) == [record.id])
        #expect(table.leavingTheForeground(as: record.id).isEmpty)
        host.hangIn = [.didEnterBackground]
        host.send(.moveToBackground)
        record.run?.machine = host.machine
        table.follow(record)
        #expect(table.running == [record.id] && table.foreground.isEmpty && table.unsettled == [record.id])
        host.returnFromHang()
        record.run?.machine = host.machine
        table.follow(record)
        #expect(host.state == .suspended)
        #expect(table.running.isEmpty && table.foreground.isEmpty && table.unsettled.isEmpty)
        // A new run, not started yet.
        _ = record.begin(LifecycleMachine(policy: Policy()), now: host.now)
        table.follow(record)
        #expect(table.running.isEmpty && table.unsettled.isEmpty)
    }
}

/// Who waits for what (Waiters): each resumed once, by what it waits for or by its time.
@Suite struct WaitersTests {
    private let files = TemporaryFiles()

    private func app() throws -> AppRecord {
        try AppTable().install(try files.bundle("Notes", identifier: "com.example.notes"))
    }

    @Test func aWaitEndsWhenItsStateComesAndItsTimeoutThenDoesNothing() async throws {
        let waiters = Waiters()
        let record = try app()
        nonisolated(unsafe) var number = 0
        let reached = await withCheckedContinuation { continuation in
            number = waiters.wait(for: record.id, state: .suspended, continuation)
            waiters.changed(record.id, state: .background, settled: true, unsettled: [])
            waiters.changed(record.id, state: .suspended, settled: true, unsettled: [])
        }
        #expect(reached)
        // Resumed once: a second resumption would trap.
        waiters.timedOut(state: number)
        waiters.changed(record.id, state: .suspended, settled: true, unsettled: [])
    }

    @Test func aWaitWhoseStateNeverComesIsToldNo() async throws {
        let waiters = Waiters()
        let record = try app()
        let reached = await withCheckedContinuation { continuation in
            let number = waiters.wait(for: record.id, state: .active, continuation)
            waiters.changed(record.id, state: .background, settled: true, unsettled: [])
            waiters.timedOut(state: number)
        }
        #expect(!reached)
        waiters.changed(record.id, state: .active, settled: true, unsettled: [])
    }

    @Test func aSettleEndsWhenItsAppsSettleAndOnlyThen() async throws {
        let waiters = Waiters()
        let notes = AppID(index: 0), other = AppID(index: 1)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let number = waiters.settle([notes], unsettled: [notes, other], continuation)
            #expect(number != nil, "Notes is between steps: the settle waits")
            // Another app settling is not this settle's end.
            waiters.changed(other, state: .suspended, settled: true, unsettled: [notes])
            waiters.changed(notes, state: .background, settled: true, unsettled: [other])
        }
        // Settled already: resumed at once, nothing to time out.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            #expect(waiters.settle([notes], unsettled: [other], continuation) == nil)
        }
    }

    @Test func aSettleThatTimesOutSaysWhichAppsAreStillBetweenSteps() async {
        let waiters = Waiters()
        let notes = AppID(index: 0)
        struct NotSettled: Error, Equatable { let ids: [AppID] }
        await #expect(throws: NotSettled(ids: [notes])) {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let number = waiters.settle(nil, unsettled: [notes], continuation)
                waiters.timedOut(settle: number!, unsettled: [notes]) { NotSettled(ids: $0) }
            }
        }
    }

    @Test func theShutdownIsSaidOnceAndStays() async {
        let waiters = Waiters()
        #expect(!waiters.isShuttingDown && !waiters.awaitsShutdown)
        await withCheckedContinuation { continuation in
            waiters.shutdown(continuation)
            #expect(waiters.isShuttingDown && waiters.awaitsShutdown)
            waiters.takeShutdowns().forEach { $0.resume() }
        }
        #expect(waiters.isShuttingDown && !waiters.awaitsShutdown)
        #expect(waiters.takeShutdowns().isEmpty)
    }

    @Test func theTearingDownBeginsOnceUntilItIsOver() async {
        let waiters = Waiters()
        await withCheckedContinuation { continuation in
            waiters.shutdown(continuation)
            #expect(waiters.stopping())
            // Under way (the launchpad stops off the loop): another app's end begins nothing new.
            #expect(!waiters.stopping())
            waiters.takeShutdowns().forEach { $0.resume() }
        }
        // Over: a shutdown asked now tears down again.
        #expect(waiters.stopping())
    }
}

/// The host's BGTaskScheduler (Scheduler), on a wall clock the test sets.
@Suite struct SchedulerTests {
    private let files = TemporaryFiles()
    private final class WallClock: @unchecked Sendable { var now = Date(timeIntervalSince1970: 2_000_000_000) }
    private let wall = WallClock()

    private func bundle(modes: [String] = ["fetch", "processing"]) throws -> AppBundle {
        try files.bundle(
            "Weather", identifier: "com.example.weather",
            info: ["UIBackgroundModes": modes, "BGTaskSchedulerPermittedIdentifiers": ["refresh", "prune"]])
    }

    private func scheduler(directory: URL? = nil, refresh: Bool = true, policy: Policy = Policy()) throws -> Scheduler {
        let wall = wall
        return Scheduler(
            store: ScheduleStore(stateDirectory: try directory ?? files.url("state-\(UUID().uuidString)")), policy: policy,
            refreshAvailable: refresh, power: .plugged, network: .online, wallClock: { wall.now })
    }

    private func refresh(in seconds: Double? = nil) -> WireTaskRequest {
        WireTaskRequest(identifier: "refresh", kind: .appRefresh, earliestBeginDate: seconds.map { 2_000_000_000 + $0 })
    }

    @Test func requestsTheHostWouldNotKeepAreRefusedWithTheirReason() throws {
        let weather = try bundle(modes: ["fetch"])
        let scheduler = try scheduler()
        #expect(scheduler.submit(WireTaskRequest(identifier: "other", kind: .appRefresh), for: weather, kept: nil)
            == .refused("other is not permitted (notPermitted)"))
        #expect(scheduler.submit(WireTaskRequest(identifier: "prune", kind: .processing), for: weather, kept: nil)
            == .refused("the request needs processing in UIBackgroundModes (notPermitted)"))
        #expect(try self.scheduler(refresh: false).submit(refresh(), for: weather, kept: nil) == .refused("background app refresh is off (unavailable)"))
        #expect(scheduler.submit(refresh(), for: weather, kept: nil) == .submitted)
        #expect(scheduler.submit(refresh(), for: weather, kept: nil) == .unchanged)
    }

    @Test func aSubmissionIsSaidKeptOnceItIsOnTheDisk() async throws {
        let directory = try files.url("kept")
        let scheduler = try scheduler(directory: directory)
        await withCheckedContinuation { kept in
            #expect(scheduler.submit(refresh(in: 60), for: try! bundle(), kept: { kept.resume() }) == .submitted)
        }
        let next = try self.scheduler(directory: directory)
        #expect(next.pending(for: "com.example.weather").map(\.identifier) == ["refresh"])
    }

    /// The force-quit gate: nothing of a force-quit app is due, and its requests wait for the user.
    @Test func aForceQuitAppIsNotWokenUntilTheUserOpensIt() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh(), for: try bundle(), kept: nil) == .submitted)
        scheduler.setForceQuit(true, for: "com.example.weather")
        #expect(scheduler.isForceQuit("com.example.weather"))
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.isEmpty)
        #expect(scheduler.waiting(for: "com.example.weather", inForeground: false).map(\.waiting) == ["the user force quit the app"])
        scheduler.setForceQuit(false, for: "com.example.weather")
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.map(\.identifier) == ["refresh"])
    }

    /// The user's termination, with or without applicationWillTerminate, is a force quit; no
    /// other end is, and a taken request is spent only while the host goes on.
    @Test func theUsersTerminationIsAForceQuitAndOnlyIt() throws {
        let scheduler = try scheduler()
        let app = "com.example.weather"
        func end(_ kind: Termination.Kind, shuttingDown: Bool = false) -> Scheduler.Ending {
            scheduler.processEnded(
                for: app, termination: Termination(kind: kind, namespace: .user, code: nil, reason: "test"), shuttingDown: shuttingDown)
        }
        for kind in [Termination.Kind.crash, .watchdog, .hostShutdown, .backgroundTime] {
            #expect(end(kind) == .ended)
            #expect(!scheduler.isForceQuit(app))
        }
        #expect(end(.userTerminated) == .forceQuit)
        #expect(scheduler.isForceQuit(app))
        scheduler.setForceQuit(false, for: app)
        #expect(end(.forceQuit, shuttingDown: true) == .forceQuit)
        #expect(scheduler.isForceQuit(app))
    }

    @Test func aRequestComesDueAtItsDateOnTheSchedulersClock() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh(in: 900), for: try bundle(), kept: nil) == .submitted)
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.isEmpty)
        #expect(scheduler.nextDate(apps: ["com.example.weather"]) == 2_000_000_900)
        scheduler.advance(by: .seconds(900))
        #expect(scheduler.clock.offset == .seconds(900))
        #expect(scheduler.takeDue(for: "com.example.weather", running: ["refresh"]).tasks.isEmpty, "one task per identifier at a time")
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.map(\.identifier) == ["refresh"])
        #expect(scheduler.pendingCount == 0)
        #expect(scheduler.resetClock() == .seconds(900))
    }

    @Test func aRequestNeedingPowerWaitsForItAndSaysSo() throws {
        let scheduler = try scheduler()
        let prune = WireTaskRequest(identifier: "prune", kind: .processing, requiresExternalPower: true)
        #expect(scheduler.submit(prune, for: try bundle(), kept: nil) == .submitted)
        #expect(scheduler.setPower(.battery) == .plugged)
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.isEmpty)
        #expect(scheduler.waiting(for: "com.example.weather", inForeground: false).map(\.waiting) == ["external power"])
        _ = scheduler.setPower(.plugged)
        #expect(scheduler.waiting(for: "com.example.weather", inForeground: true).map(\.waiting) == ["the app to leave the foreground"])
        #expect(scheduler.takeDue(for: "com.example.weather", running: []).tasks.map(\.identifier) == ["prune"])
    }

    @Test func aTaskRunEarlyKeepsItsIntervalFromThen() throws {
        var policy = Policy()
        policy.minimumRefreshTaskInterval = .seconds(600)
        let scheduler = try scheduler(policy: policy)
        let weather = try bundle()
        #expect(scheduler.submit(refresh(), for: weather, kept: nil) == .submitted)
        #expect(scheduler.runEarly("refresh", for: weather).pending?.identifier == "refresh")
        scheduler.ran("refresh", for: weather.identifier)
        #expect(scheduler.submit(refresh(), for: weather, kept: nil) == .submitted)
        #expect(scheduler.takeDue(for: weather.identifier, running: []).tasks.isEmpty)
        #expect(scheduler.heldByTheirInterval == ["refresh"])
        wall.now += 600
        #expect(scheduler.takeDue(for: weather.identifier, running: []).tasks.map(\.identifier) == ["refresh"])
    }
}

/// When the launch template starts again and standbys are made (TemplateSupervision).
@Suite struct TemplateSupervisionTests {
    private let start = HostInstant(nanoseconds: 1_000_000_000)

    @Test func theTemplateIsRestartedThreeTimesInAMinuteThenNotAgain() {
        var rule = TemplateSupervision()
        for (second, restart) in [(0.0, true), (10, true), (20, true), (30, false)] {
            #expect(rule.templateEnded(at: start + .seconds(double: second)).restart == restart, "end at \(second) s")
        }
        // The window slides: a minute after the first two, two ends are in it.
        #expect(rule.templateEnded(at: start + .seconds(75)) == (true, 3))
    }

    @Test func threeStandbysFailedInARowStopStandbysUntilTheTemplateStarts() {
        var rule = TemplateSupervision()
        rule.standbyMade(false)
        rule.standbyMade(false)
        rule.standbyMade(true)
        #expect(rule.makesStandbys, "a whole one resets the count")
        for _ in 0..<3 { rule.standbyMade(false) }
        #expect(!rule.makesStandbys)
        rule.templateStarted()
        #expect(rule.makesStandbys)
    }
}

/// What a refused system call means (ResourceRules.violationTermination).
@Suite struct ViolationLimitTests {
    @Test func aDangerousCallEndsTheAppAtOnce() {
        let end = ResourceRules.violationTermination(call: "ptrace(…)", dangerous: true, state: .active, count: 1, limit: nil)
        #expect(end?.kind == .forbiddenSyscall && end?.code == UInt64(SIGSYS))
        #expect(end?.reason == "made the forbidden system call ptrace(…) while active; killed by SIGSYS")
    }

    @Test func refusedCallsEndTheAppAtThePolicysLimit() {
        #expect(ResourceRules.violationTermination(call: "socket(…)", dangerous: false, state: .active, count: 5, limit: nil) == nil)
        #expect(ResourceRules.violationTermination(call: "socket(…)", dangerous: false, state: .active, count: 2, limit: 3) == nil)
        let end = ResourceRules.violationTermination(call: "socket(…)", dangerous: false, state: .background, count: 3, limit: 3)
        #expect(end?.kind == .sandboxViolations)
        #expect(end?.reason == "made 3 refused system calls (the policy allows 3); the last: socket(…)")
    }
}

/// What is owed of finished transfers and the wakes for it (TransferDeliveries).
@Suite struct TransferDeliveriesTests {
    private func finished(_ id: String, session: String = "com.example.episodes", launchEvents: Bool = true) -> TransferRecord {
        TransferRecord(
            id: id, app: "com.example.podcasts",
            transfer: WireTransfer(session: session, task: 1, kind: .download, url: "http://localhost/\(id)", sessionSendsLaunchEvents: launchEvents),
            phase: .finished, created: Date())
    }

    private let app = "com.example.podcasts"
    private func run(_ launch: Int) -> RunID { RunID(app: AppID(index: 0), launch: launch) }

    /// The 3-wake cap: an app that never takes its transfers is woken three times for them, then
    /// they wait for it to run for another reason.
    @Test func aTransferWakesItsAppThreeTimesAtMost() {
        var ledger = TransferDeliveries()
        let owed = [finished("a")]
        for launch in 0..<3 {
            #expect(ledger.sessionsToWake(app: app, owed: owed, run: nil) == ["com.example.episodes"], "wake \(launch + 1)")
            #expect(ledger.sessionsToWake(app: app, owed: owed, run: nil) == [], "one wake at a time")
            ledger.appNotRunning(app)  // it crashed before its callback was sent
        }
        #expect(ledger.sessionsToWake(app: app, owed: owed, run: nil) == [])
        // Delivered at last (the app ran for another reason): a new transfer may wake it again.
        ledger.forget("a")
        #expect(ledger.sessionsToWake(app: app, owed: [finished("b")], run: nil) == ["com.example.episodes"])
    }

    @Test func aTransferIsSentToARunOnceAndToTheNextRunAgain() {
        var ledger = TransferDeliveries()
        ledger.sent("a", to: run(0))
        #expect(ledger.wasSent("a", to: run(0)))
        #expect(!ledger.wasSent("a", to: run(1)), "a run that never said it was delivered: the next run gets it")
        #expect(ledger.sessionsToWake(app: app, owed: [finished("a")], run: run(0)) == [], "sent to this run already")
        #expect(ledger.sessionsToWake(app: app, owed: [finished("a")], run: run(1)) == ["com.example.episodes"])
    }

    @Test func onlySessionsThatSendLaunchEventsWakeTheApp() {
        var ledger = TransferDeliveries()
        let owed = [finished("a", session: "quiet", launchEvents: false), finished("b", session: "loud")]
        #expect(ledger.sessionsToWake(app: app, owed: owed, run: nil) == ["loud"])
        #expect(ledger.isWaking(.init(app: app, name: "loud")) && !ledger.isWaking(.init(app: app, name: "quiet")))
        ledger.woke(.init(app: app, name: "loud"))
        #expect(!ledger.isWaking(.init(app: app, name: "loud")))
    }
}

/// The memory budget and a pressure episode over time (ResourceMonitor), on a virtual clock.
@Suite struct ResourceMonitorTests {
    private let start = HostInstant(nanoseconds: 1_000_000_000)
    private let mebibyte: UInt64 = 1 << 20

    private func monitor() -> ResourceMonitor {
        ResourceMonitor(budget: 100 * mebibyte, policy: Policy(), sharedResources: SharedResourceCheck(groupsDirectory: "/nonexistent", declared: []))
    }

    /// A live app in `state` since `seconds` after the start, as the pressure rules are told of it.
    private func live(_ index: Int, _ state: AppState, _ mebibytes: UInt64, since seconds: Double, inForeground: Bool = false) -> ResourceMonitor.LiveApp {
        .init(id: AppID(index: index), name: "App\(index)", state: state, inForeground: inForeground, starting: false,
              memory: mebibytes * mebibyte, since: start + .seconds(double: seconds))
    }

    /// A sample of a suspended app.
    private func measured(_ index: Int, _ mebibytes: UInt64) -> ResourceMonitor.Sample {
        .init(id: AppID(index: index), state: .suspended, inForeground: false, memory: mebibytes * mebibyte, limitedByGroup: false, suspending: false)
    }

    /// The app a step ends, if it ends one.
    private func ended(_ step: MemoryPressure<AppID>.Step?) -> AppID? {
        guard case .end(let id, _)? = step else { return nil }
        return id
    }

    @Test func overTheBudgetBeginsOneEpisodeAtATime() {
        let resources = monitor()
        #expect(resources.sample([measured(0, 100)], now: start) == [])
        #expect(resources.sample([measured(0, 101)], now: start) == [.beginPressure(target: 100 * mebibyte, usage: 101 * mebibyte, cause: "over the memory budget")])
        let notice = PressureNotice(cause: "over the memory budget", usage: 101 * mebibyte, budget: 100 * mebibyte, warned: [], grace: .seconds(2), target: 100 * mebibyte)
        #expect(resources.beginPressure(target: 100 * mebibyte, usage: 101 * mebibyte, cause: "over the memory budget", now: start, apps: [])
            == [.disconnectBackgroundScenes, .announce(notice)], "the scenes are disconnected before anything else")
        #expect(resources.sample([measured(0, 200)], now: start) == [], "one under way")
        #expect(resources.beginPressure(target: 80 * mebibyte, usage: 200 * mebibyte, cause: "memory-pressure", now: start + .seconds(1), apps: []) == [],
                "a second cause only tightens it")
        #expect(resources.pressureDeadline == start + .seconds(2))
    }

    /// After the grace, the app suspended longest is ended first (by when ResourceMonitor heard
    /// it suspended); the episode waits for it to go, then ends once usage fits.
    @Test func theEpisodeEndsTheLongestSuspendedAppThenEnds() {
        let resources = monitor()
        resources.stateChanged(AppID(index: 1), to: .suspended, cpu: nil, now: start + .seconds(1))
        resources.stateChanged(AppID(index: 0), to: .suspended, cpu: nil, now: start + .seconds(5))
        _ = resources.beginPressure(target: 100 * mebibyte, usage: 120 * mebibyte, cause: "over the memory budget", now: start, apps: [])
        let apps = [live(0, .suspended, 60, since: 0), live(1, .suspended, 60, since: 9)]
        #expect(resources.stepPressure(now: start + .seconds(1), apps: apps) == .wait, "in its grace")
        #expect(ended(resources.stepPressure(now: start + .seconds(2), apps: apps)) == AppID(index: 1), "suspended at 1 s, before the other")
        #expect(resources.stepPressure(now: start + .seconds(2), apps: apps) == .wait, "until it is gone")
        #expect(!resources.appEnded(AppID(index: 0)), "not the one it waits for")
        #expect(resources.appEnded(AppID(index: 1)))
        #expect(resources.stepPressure(now: start + .seconds(3), apps: [apps[0]]) == .over("ended App1; the apps use 60.0 MiB, within 100.0 MiB"))
        #expect(resources.pressureDeadline == nil)
        #expect(resources.stepPressure(now: start + .seconds(4), apps: []) == nil)
    }

    /// Least recently used first: suspended apps by when they were suspended, then the apps
    /// running in the background by when they entered it, the foreground app last.
    @Test func appsAreEndedSuspendedLongestFirstAndTheForegroundAppLast() {
        let resources = monitor()
        resources.stateChanged(AppID(index: 0), to: .suspended, cpu: nil, now: start + .seconds(3))
        resources.stateChanged(AppID(index: 1), to: .suspended, cpu: nil, now: start + .seconds(2))
        _ = resources.beginPressure(target: 0, usage: 100 * mebibyte, cause: "memory-pressure 0.0 MiB", now: start, apps: [])
        var apps = [
            live(4, .active, 10, since: 0, inForeground: true), live(0, .suspended, 10, since: 3), live(2, .background, 10, since: 8),
            live(3, .background, 10, since: 7), live(1, .suspended, 10, since: 2),
        ]
        var order: [AppID] = []
        while let victim = ended(resources.stepPressure(now: start + .seconds(2), apps: apps)) {
            order.append(victim)
            _ = resources.appEnded(victim)
            apps.removeAll { $0.id == victim }
        }
        #expect(order == [1, 0, 3, 2, 4].map { AppID(index: $0) })
    }

    /// Suspended again, an app is ordered by its latest suspension (the snapshots here say
    /// nothing of it).
    @Test func anAppIsOrderedByItsLatestSuspension() {
        let resources = monitor()
        resources.stateChanged(AppID(index: 0), to: .suspended, cpu: nil, now: start + .seconds(1))
        resources.stateChanged(AppID(index: 1), to: .suspended, cpu: nil, now: start + .seconds(2))
        resources.stateChanged(AppID(index: 0), to: .background, cpu: nil, now: start + .seconds(3))
        resources.stateChanged(AppID(index: 0), to: .suspended, cpu: nil, now: start + .seconds(4))
        _ = resources.beginPressure(target: 0, usage: 100 * mebibyte, cause: "memory-pressure 0.0 MiB", now: start, apps: [])
        let apps = [live(0, .suspended, 10, since: 0), live(1, .suspended, 10, since: 0)]
        #expect(ended(resources.stepPressure(now: start + .seconds(2), apps: apps)) == AppID(index: 1))
    }
}

/// The machines' inputs, one at a time (InputQueue).
@Suite struct InputQueueTests {
    private let files = TemporaryFiles()

    @Test func anInputThatArrivesWhileAnotherIsHandledWaitsItsTurn() throws {
        let record = try AppTable().install(try files.bundle("Notes", identifier: "com.example.notes"))
        let run = AppRun(machine: LifecycleMachine(policy: Policy()), id: RunID(app: record.id, launch: 0), now: HostInstant(nanoseconds: 0))
        let inputs = InputQueue()
        var handled: [String] = []
        var nestedDrained: Bool?
        let drained = inputs.add((record, run, .tick)) { item in
            handled.append("\(item.input)")
            if case .tick = item.input {
                // An effect of the first input observes something: it is queued, not handled here.
                nestedDrained = inputs.add((record, run, .memoryWarning)) { _ in handled.append("nested") }
                handled.append("after the effect")
            }
        }
        #expect(drained)
        #expect(nestedDrained == false)
        #expect(handled == ["tick", "after the effect", "memoryWarning"])
    }
}
