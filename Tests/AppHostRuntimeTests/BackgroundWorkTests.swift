import AppHostProtocol
import Foundation
import Testing
import AppHostSystem
@testable import AppHostRuntime

/// Background events in the life-cycle machine, on a virtual clock: the 30 s and 5 min budgets
/// of the life cycle are checked in microseconds.
@Suite struct BackgroundWorkMachineTests {
    static let refresh = BackgroundEvent(kind: .appRefresh, taskIdentifier: "com.example.refresh")
    static let processing = BackgroundEvent(kind: .processing, taskIdentifier: "com.example.clean", requiresExternalPower: true)

    /// An app launched to the foreground, sent to the background and suspended.
    static func suspendedApp(_ policy: Policy = Policy()) -> SimulatedHost {
        var host = SimulatedHost(policy: policy)
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.callbacks = []
        host.events = []
        return host
    }

    @Test func sequence5LaunchIntoTheBackgroundForAFetch() {
        var host = SimulatedHost()
        host.send(.deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"))
        #expect(host.callbacks == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background",
            "performFetch background",
        ])
        #expect(host.state == .background, "not suspended while the fetch runs")
        host.advance(by: .seconds(29))
        host.send(.workCompleted(id: host.work[0], result: "newData"))
        #expect(host.callbacks.suffix(1) == ["snapshot background"], "the snapshot follows the fetch, showing its result")
        #expect(host.events.suffix(4) == ["performFetch", "fetchCompleted", "snapshot", "suspended"])
        #expect(!host.events.contains("didBecomeActive"))
        #expect(host.state == .suspended)
        #expect(host.finished == nil)
    }

    @Test func aFetchThatNeverCompletesIsKilledAfterItsBudget() {
        var host = SimulatedHost()
        host.send(.deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"))
        host.advance(by: .milliseconds(29_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.backgroundWorkOverrun.rawValue)
        #expect(host.finished?.kind == .backgroundFetch)
        #expect(host.finished?.reason == "did not call the completion handler of application(_:performFetchWithCompletionHandler:) within 30.0 s")
    }

    @Test func sequence6ResumeIntoTheBackgroundForANotification() {
        var host = Self.suspendedApp()
        host.send(.deliver(BackgroundEvent(kind: .remoteNotification, payload: "{}"), reason: "remoteNotification"))
        #expect(!host.frozen)
        #expect(host.callbacks == ["didEnterBackground background", "didReceiveRemoteNotification background"])
        #expect(host.events.prefix(1) == ["resumed"])
        host.advance(by: .seconds(30))
        #expect(host.finished?.kind == .remoteNotification)
        #expect(host.finished?.code == TerminationCode.backgroundWorkOverrun.rawValue)
    }

    @Test func aNotificationReachesTheForegroundAppInItsActiveState() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.callbacks = []
        host.send(.deliver(BackgroundEvent(kind: .remoteNotification, payload: "{}"), reason: "remoteNotification"))
        #expect(host.callbacks == ["didReceiveRemoteNotification active"])
        host.send(.workCompleted(id: host.work[0], result: "noData"))
        #expect(host.state == .active)
    }

    @Test func aRefreshTaskExpiresAtItsBudgetAndIsKilledAfterTheGrace() {
        var host = Self.suspendedApp()
        host.send(.deliver(Self.refresh, reason: "backgroundTask"))
        #expect(host.callbacks == ["didEnterBackground background", "launchTask background"])
        host.advance(by: .milliseconds(29_999))
        #expect(host.workExpirations.isEmpty)
        host.advance(by: .milliseconds(1))
        #expect(host.workExpirations == host.work, "the expiration handler runs when the 30 s end")
        #expect(host.events.last == "taskExpired")
        host.advance(by: .milliseconds(4_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.backgroundWorkOverrun.rawValue)
        #expect(host.finished?.kind == .backgroundTask)
        #expect(host.finished?.reason == "BGAppRefreshTask com.example.refresh did not call setTaskCompleted(success:) within 5.0 s of its expiration (its 30.0 s ran out)")
    }

    @Test func aTaskCompletedAfterItsExpirationIsSuspendedNotKilled() {
        var host = Self.suspendedApp()
        host.send(.deliver(Self.refresh, reason: "backgroundTask"))
        host.send(.expireWork(ids: nil, reason: "expired on demand"))
        #expect(host.workExpirations == host.work)
        host.advance(by: .seconds(2))
        host.send(.workCompleted(id: host.work[0], result: "failure"))
        #expect(host.state == .suspended)
        host.advance(by: .seconds(60))
        #expect(host.finished == nil)
    }

    @Test func aProcessingTaskHasMinutesAndEndsWithoutAKillWhenTheUserOpensTheApp() {
        var host = Self.suspendedApp()
        host.send(.deliver(Self.processing, reason: "backgroundTask"))
        host.advance(by: .seconds(299))
        #expect(host.workExpirations.isEmpty, "5 minutes by default")
        host.send(.moveToForeground)
        #expect(host.workExpirations == host.work)
        #expect(host.state == .active)
        host.advance(by: .seconds(600))
        #expect(host.finished == nil)
    }

    @Test func aProcessingTaskEndsWhenItsConditionStopsHolding() {
        var host = Self.suspendedApp()
        host.send(.deliver(Self.processing, reason: "backgroundTask"))
        host.send(.conditionsChanged(externalPower: true, network: false))
        #expect(host.workExpirations.isEmpty, "it needs power, not the network")
        host.send(.conditionsChanged(externalPower: false, network: false))
        #expect(host.workExpirations == host.work)
        host.advance(by: .seconds(5))
        #expect(host.finished?.reason == "BGProcessingTask com.example.clean did not call setTaskCompleted(success:) within 5.0 s of its expiration (external power was lost)")
    }

    @Test func expiringBackgroundTimeOnDemandRunsHandlersAndStartsTheGrace() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 7, name: "upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(1))
        host.send(.expireBackgroundTime)
        #expect(host.expirations == [[7]])
        #expect(host.machine.backgroundTimeRemaining(at: host.now) == .zero)
        host.advance(by: .milliseconds(4_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.backgroundTimeExhausted.rawValue)
        // Its 30 s did not run out: the report says what ended them.
        #expect(host.finished?.reason == "background task #7 \"upload\" still open 5.0 s after its background time was ended on demand (expire); "
            + "its expiration handler must end it (endBackgroundTask)")
    }

    @Test func anEventDuringSuspensionResumesTheAppOnceSuspended() {
        var host = SimulatedHost()
        host.verifiesSuspension = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        #expect(host.machine.phase == .suspending)
        host.callbacks = []
        host.send(.deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"))
        #expect(host.callbacks.isEmpty, "the event waits for the freeze to be verified")
        host.send(.suspensionVerified)
        #expect(!host.frozen)
        #expect(host.callbacks == ["didEnterBackground background", "performFetch background"])
    }
}

/// The scheduler's bookkeeping: limits, replacement, due dates, conditions, force quits, the store.
@Suite struct BackgroundScheduleTests {
    static let plugged = BackgroundSchedule.Conditions(power: .plugged, network: .online)

    func request(_ identifier: String, _ kind: WireTaskRequest.Kind, at date: Double? = nil, power: Bool = false) -> WireTaskRequest {
        WireTaskRequest(identifier: identifier, kind: kind, earliestBeginDate: date, requiresExternalPower: power)
    }

    @Test func oneRefreshAndTenProcessingRequestsArePendingAtMostAndResubmittingReplaces() throws {
        var schedule = BackgroundSchedule()
        try schedule.submit(request("r1", .appRefresh, at: 10), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        try schedule.submit(request("r1", .appRefresh, at: 20), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        #expect(schedule.apps["app"]?.requests == [request("r1", .appRefresh, at: 20)])
        #expect(throws: BackgroundSchedule.Refusal.tooManyPending(limit: 1)) {
            try schedule.submit(request("r2", .appRefresh), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        }
        for index in 0..<10 {
            try schedule.submit(request("p\(index)", .processing), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        }
        #expect(throws: BackgroundSchedule.Refusal.tooManyPending(limit: 10)) {
            try schedule.submit(request("p10", .processing), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        }
        #expect(schedule.cancel(nil, for: "app").count == 11)
    }

    @Test func requestsBecomeDueAtTheirDateAndWhenTheirConditionsHold() throws {
        var schedule = BackgroundSchedule()
        try schedule.submit(request("later", .appRefresh, at: 1000), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        try schedule.submit(request("plugged", .processing, power: true), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        let battery = BackgroundSchedule.Conditions(power: .battery, network: .online)
        #expect(schedule.nextDate(after: 0, apps: ["app"], conditions: battery, refreshAvailable: true) == 1000)
        #expect(schedule.takeDue(for: "app", now: 999, conditions: battery, refreshAvailable: true, fetchFloor: 900).tasks.isEmpty)
        let due = schedule.takeDue(for: "app", now: 999, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900)
        #expect(due.tasks.map(\.identifier) == ["plugged"])
        #expect(schedule.takeDue(for: "app", now: 1000, conditions: battery, refreshAvailable: false, fetchFloor: 900).tasks.isEmpty,
                "no refresh task without background app refresh")
        #expect(schedule.takeDue(for: "app", now: 1000, conditions: battery, refreshAvailable: true, fetchFloor: 900).tasks.map(\.identifier) == ["later"])
        #expect(schedule.apps["app"]?.requests == [])

        try schedule.submit(request("plugged", .processing), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        #expect(schedule.takeDue(for: "app", now: 2000, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900, running: ["plugged"]).tasks.isEmpty,
                "a request waits while its identifier's task still runs")
    }

    /// A request taken to run stays in the store until the app begins its task: a host killed in
    /// between hands it back as pending at the next start (found by scripts/chaos: it was lost);
    /// once begun it is spent, and a process that died launching spends what it was given.
    @Test func aTakenRequestIsSpentOnlyOnceTheAppBeginsIt() throws {
        var schedule = BackgroundSchedule()
        try schedule.submit(request("refresh", .appRefresh, at: 10), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        try schedule.submit(request("clean", .processing, at: 10), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        let due = schedule.takeDue(for: "app", now: 20, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900)
        #expect(due.tasks.map(\.identifier) == ["refresh", "clean"])
        #expect(schedule.apps["app"]?.requests == [])
        #expect(schedule.apps["app"]?.taken?.map(\.identifier) == ["refresh", "clean"])
        let began = schedule.began("refresh", for: "app")
        let again = schedule.began("refresh", for: "app")
        #expect(began && !again, "spent once")

        // The host dies with "clean" taken and not begun: the next start hands it back.
        var restarted = schedule
        let returned = restarted.returnTaken()
        #expect(returned.map { "\($0.app) \($0.identifiers)" } == ["app [\"clean\"]"])
        #expect(restarted.apps["app"]?.requests.map(\.identifier) == ["clean"])
        #expect(restarted.apps["app"]?.taken == nil)
        // Submitted anew meanwhile: the new request stands, the taken one is not added twice.
        var resubmitted = schedule
        try resubmitted.submit(request("clean", .processing, at: 99), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        let none = resubmitted.returnTaken()
        #expect(none.isEmpty)
        #expect(resubmitted.apps["app"]?.requests.map(\.earliestBeginDate) == [99])

        // The app died launching with it: spent, as on iOS.
        let dropped = schedule.dropTaken(for: "app")
        #expect(dropped == ["clean"])
        let nothing = schedule.returnTaken()
        #expect(nothing.isEmpty)
    }

    @Test func fetchesComeAnIntervalApartAndNeverForAForceQuitApp() {
        var schedule = BackgroundSchedule()
        schedule.setFetchInterval(60, for: "app", now: 0, floor: 900)
        #expect(schedule.nextDate(after: 0, apps: ["app"], conditions: Self.plugged, refreshAvailable: true) == 900, "the host's floor wins")
        #expect(!schedule.takeDue(for: "app", now: 899, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900).fetch)
        #expect(schedule.takeDue(for: "app", now: 900, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900).fetch)
        #expect(schedule.apps["app"]?.nextFetch == 1800)
        schedule.setForceQuit(true, for: "app")
        #expect(!schedule.takeDue(for: "app", now: 5000, conditions: Self.plugged, refreshAvailable: true, fetchFloor: 900).fetch)
        #expect(schedule.nextDate(after: 0, apps: ["app"], conditions: Self.plugged, refreshAvailable: true) == nil)
    }

    @Test func theStoreRoundTripsIgnoresAPartialWriteAndKeepsACorruptOneAside() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-store-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ScheduleStore(stateDirectory: directory)
        var schedule = BackgroundSchedule()
        try schedule.submit(request("r1", .appRefresh, at: 10), for: "app", maximumRefresh: 1, maximumProcessing: 10)
        try store.save(schedule)
        // What a writer killed mid-write leaves beside the store is not the store.
        try Data("{\"apps\": {\"app\": {\"requ".utf8).write(to: URL(fileURLWithPath: store.store.file.temporaryPath))
        let loaded = store.load()
        #expect(loaded.schedule == schedule)
        #expect(loaded.warning == nil)

        try Data("{\"apps\": 3".utf8).write(to: store.url)
        let corrupt = store.load()
        #expect(corrupt.schedule == BackgroundSchedule())
        #expect(corrupt.warning?.contains("kept it as background-tasks.json.unreadable-1") == true)
        #expect(FileManager.default.fileExists(atPath: store.url.path + ".unreadable-1"))
    }
}
