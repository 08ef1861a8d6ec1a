import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// The scheduler's rules on the facts the host takes of each app (Scheduler+Wake.swift and the
/// due-work pass), on a wall clock the test sets: which apps may be woken, what a pass over the
/// due work hands to whom or drops, and what the app's BGTaskScheduler calls are answered.
@Suite struct SchedulerRuleTests {
    private let files = TemporaryFiles()
    private final class WallClock: @unchecked Sendable { var now = Date(timeIntervalSince1970: 2_000_000_000) }
    private let wall = WallClock()
    private let weatherID = AppID(index: 2)

    private func bundle(modes: [String] = ["fetch", "processing"]) throws -> AppBundle {
        try files.bundle(
            "Weather", identifier: "com.example.weather",
            info: ["UIBackgroundModes": modes, "BGTaskSchedulerPermittedIdentifiers": ["refresh", "prune"]])
    }

    private func scheduler(policy: Policy = Policy(), refresh: Bool = true) throws -> Scheduler {
        let wall = wall
        return Scheduler(
            store: ScheduleStore(stateDirectory: try files.url("state-\(UUID().uuidString)")), policy: policy,
            refreshAvailable: refresh, power: .plugged, network: .online, wallClock: { wall.now })
    }

    /// The app as the host would describe it: not running (`run` nil), or alive in `state`.
    private func weather(
        _ state: AppState? = nil, launchFinished: Bool = true, inForeground: Bool = false, ending: Bool = false,
        registered: Set<String> = [], modes: Set<BackgroundMode> = [.fetch, .processing]
    ) -> Scheduler.AppFacts {
        Scheduler.AppFacts(
            id: weatherID, identifier: "com.example.weather", name: "Weather", backgroundModes: modes, permittedTasks: ["refresh", "prune"],
            run: state.map {
                Scheduler.RunFacts(state: $0, launchFinished: launchFinished, inForeground: inForeground, isEnding: ending, registeredTasks: registered)
            })
    }

    private let refresh = WireTaskRequest(identifier: "refresh", kind: .appRefresh)
    private let refreshEvent = BackgroundEvent(kind: .appRefresh, taskIdentifier: "refresh")

    // MARK: Who may be woken

    /// The force-quit gate, and the apps a scheduled wake must leave alone.
    @Test func aWakeSparesForceQuitForegroundAndEndingAppsAndAHostShuttingDown() throws {
        let scheduler = try scheduler()
        #expect(scheduler.mayWake(weather(), shuttingDown: false), "not running: launched into the background")
        #expect(!scheduler.mayWake(weather(), shuttingDown: true), "no launch while the host shuts down")
        #expect(scheduler.mayWake(weather(.suspended), shuttingDown: false), "suspended: resumed")
        #expect(scheduler.mayWake(weather(.suspended), shuttingDown: true), "a live app is woken while the host shuts down")
        #expect(scheduler.mayWake(weather(.background), shuttingDown: false))
        #expect(scheduler.mayWake(weather(.launching, launchFinished: false), shuttingDown: false), "launching into the background")
        #expect(!scheduler.mayWake(weather(.active, inForeground: true), shuttingDown: false))
        #expect(!scheduler.mayWake(weather(.launching, launchFinished: false, inForeground: true), shuttingDown: false))
        #expect(!scheduler.mayWake(weather(.background, ending: true), shuttingDown: false))
        scheduler.setForceQuit(true, for: "com.example.weather")
        #expect(!scheduler.mayWake(weather(), shuttingDown: false))
        #expect(!scheduler.mayWake(weather(.suspended), shuttingDown: false))
        scheduler.setForceQuit(false, for: "com.example.weather")
        #expect(scheduler.mayWake(weather(.suspended), shuttingDown: false))
    }

    /// What a command that wakes the app on demand is told, and when.
    @Test func anEventOnDemandIsRefusedWithItsReason() throws {
        let scheduler = try scheduler()
        #expect(scheduler.refusalToWake(weather(), pushOnly: false, shuttingDown: false) == nil)
        #expect(scheduler.refusalToWake(weather(.suspended), pushOnly: false, shuttingDown: true) == nil)
        let shutting = scheduler.refusalToWake(weather(), pushOnly: false, shuttingDown: true)
        #expect(shutting?.code == .shuttingDown && shutting?.message == "the host is shutting down")
        let foreground = scheduler.refusalToWake(weather(.active, inForeground: true), pushOnly: false, shuttingDown: false)
        #expect(foreground?.code == .wrongState)
        #expect(foreground?.message == "Weather is in the foreground (active); background events reach it in the background (home first)")
        #expect(scheduler.refusalToWake(weather(.active, inForeground: true), pushOnly: true, shuttingDown: false) == nil, "a notification reaches it")
        let ending = scheduler.refusalToWake(weather(.background, ending: true), pushOnly: true, shuttingDown: false)
        #expect(ending?.code == .wrongState && ending?.message == "Weather is being terminated")
        scheduler.setForceQuit(true, for: "com.example.weather")
        let forceQuit = scheduler.refusalToWake(weather(.suspended), pushOnly: true, shuttingDown: false)
        #expect(forceQuit?.code == .refused)
        #expect(forceQuit?.message == "Weather was force quit by the user: iOS wakes it in the background only after the user opens it again (open Weather)")
    }

    /// `fetch APP`: the mode first, then background app refresh, then whether the app can be
    /// reached.
    @Test func aFetchOnDemandNeedsTheModeRefreshAndAReachableApp() throws {
        let scheduler = try scheduler()
        #expect(scheduler.refusalToFetch(weather(.suspended), shuttingDown: false) == nil)
        let noMode = scheduler.refusalToFetch(weather(.active, inForeground: true, modes: [.processing]), shuttingDown: false)
        #expect(noMode?.code == .refused)
        #expect(noMode?.message == "Weather has no fetch in Info.plist UIBackgroundModes: iOS would not wake it for a background fetch")
        #expect(scheduler.refusalToFetch(weather(.active, inForeground: true), shuttingDown: false)?.code == .wrongState)
        let off = try self.scheduler(refresh: false).refusalToFetch(weather(.suspended), shuttingDown: false)
        #expect(off?.message == "background app refresh is off on this host (--no-background-app-refresh): iOS would not fetch")
    }

    /// `run-task APP IDENTIFIER`: permitted, the kind's mode, a handler once launched, reachable.
    @Test func aTaskRunOnDemandIsRefusedWithItsReason() throws {
        let scheduler = try scheduler()
        #expect(scheduler.refusalToRun("refresh", kind: .appRefresh, weather(.suspended, registered: ["refresh"]), shuttingDown: false) == nil)
        #expect(scheduler.refusalToRun("refresh", kind: .appRefresh, weather(), shuttingDown: false) == nil, "its launch registers it")
        #expect(scheduler.refusalToRun("other", kind: .appRefresh, weather(), shuttingDown: false)?.message
            == "other is not in Weather's BGTaskSchedulerPermittedIdentifiers (refresh, prune): iOS would not run it")
        #expect(scheduler.refusalToRun("prune", kind: .processing, weather(modes: [.fetch]), shuttingDown: false)?.message
            == "Weather has no processing in Info.plist UIBackgroundModes: iOS would not wake it for a processing task")
        #expect(scheduler.refusalToRun("refresh", kind: .appRefresh, weather(.suspended, registered: ["prune"]), shuttingDown: false)?.message
            == "Weather registered no launch handler for refresh while it launched; register it before application(_:didFinishLaunchingWithOptions:) returns")
        #expect(scheduler.refusalToRun("refresh", kind: .appRefresh, weather(.active, inForeground: true, registered: ["refresh"]), shuttingDown: false)?.code
            == .wrongState)
    }

    // MARK: The due-work pass

    @Test func aDueRequestIsHandedToASuspendedAppAndKeptTakenBeforeIt() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh, for: try bundle(), kept: nil) == .submitted)
        let pass = scheduler.takeDueWork(apps: [weather(.suspended, registered: ["refresh"])], shuttingDown: false)
        #expect(pass == Scheduler.DuePass(effects: [.deliver(weatherID, refreshEvent)], save: .now))
        #expect(scheduler.pendingCount == 0)
        #expect(scheduler.takeDueWork(apps: [weather(.suspended, registered: ["refresh"])], shuttingDown: false) == Scheduler.DuePass())
    }

    /// Nothing is taken for an app that may not be woken: the request stays pending for later.
    @Test func aDueRequestWaitsWhileItsAppIsInTheForegroundOrForceQuit() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh, for: try bundle(), kept: nil) == .submitted)
        #expect(scheduler.takeDueWork(apps: [weather(.active, inForeground: true)], shuttingDown: false) == Scheduler.DuePass())
        scheduler.setForceQuit(true, for: "com.example.weather")
        #expect(scheduler.takeDueWork(apps: [weather()], shuttingDown: false) == Scheduler.DuePass())
        #expect(scheduler.pendingCount == 1)
        scheduler.setForceQuit(false, for: "com.example.weather")
        #expect(scheduler.takeDueWork(apps: [weather()], shuttingDown: false).effects == [.deliver(weatherID, refreshEvent)])
    }

    /// An app whose launch is over without a launch handler for the request's identifier can
    /// never run it in this process: the request is spent, with a warning; an app still
    /// launching may yet register it, so it is handed the request.
    @Test func aDueRequestWithNoHandlerIsDroppedWithItsWarning() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh, for: try bundle(), kept: nil) == .submitted)
        let pass = scheduler.takeDueWork(apps: [weather(.background, registered: ["prune"])], shuttingDown: false)
        #expect(pass.effects == [.warn(weatherID, "dropped the due request refresh: the app registered no launch handler for it")])
        #expect(pass.save == .now, "the drop is on the disk before it is said")
        #expect(scheduler.pendingCount == 0)

        // (Another identifier: a request taken counts as a run towards its minimum interval.)
        #expect(scheduler.submit(WireTaskRequest(identifier: "prune", kind: .processing), for: try bundle(), kept: nil) == .submitted)
        #expect(scheduler.takeDueWork(apps: [weather(.launching, launchFinished: false)], shuttingDown: false).effects
            == [.deliver(weatherID, BackgroundEvent(kind: .processing, taskIdentifier: "prune"))])
    }

    /// A request whose task is under way waits for it to end.
    @Test func aRequestWhoseTaskRunsWaitsForIt() throws {
        let scheduler = try scheduler()
        #expect(scheduler.submit(refresh, for: try bundle(), kept: nil) == .submitted)
        var busy = weather(.background, registered: ["refresh"])
        busy.runningTasks = ["refresh"]
        #expect(scheduler.takeDueWork(apps: [busy], shuttingDown: false) == Scheduler.DuePass())
        busy.runningTasks = []
        #expect(scheduler.takeDueWork(apps: [busy], shuttingDown: false).effects == [.deliver(weatherID, refreshEvent)])
    }

    /// A due fetch is delivered only to an app with the fetch mode; one taken without it is saved
    /// later (nothing runs).
    @Test func aDueFetchReachesOnlyAnAppWithTheFetchMode() throws {
        let scheduler = try scheduler()
        scheduler.setFetchInterval(0, for: "com.example.weather", kept: nil)
        #expect(scheduler.takeDueWork(apps: [weather()], shuttingDown: false) == Scheduler.DuePass(), "not before the floor")
        #expect(scheduler.untilNextDue(apps: ["com.example.weather"]) == .seconds(900))
        wall.now += 600
        #expect(scheduler.untilNextDue(apps: ["com.example.weather"]) == .seconds(300))
        wall.now += 300
        #expect(scheduler.takeDueWork(apps: [weather()], shuttingDown: false)
            == Scheduler.DuePass(effects: [.deliver(weatherID, BackgroundEvent(kind: .fetch))], save: .now))
        wall.now += 900
        #expect(scheduler.takeDueWork(apps: [weather(modes: [.processing])], shuttingDown: false) == Scheduler.DuePass(save: .later))
    }

    // MARK: What the app asks

    /// The submission refusals: not permitted, a missing mode, and too many pending of a kind.
    @Test func aSubmissionOverThePendingLimitIsRefused() throws {
        var policy = Policy()
        policy.maximumPendingRefreshRequests = 1
        let scheduler = try scheduler(policy: policy)
        let weather = try bundle()
        #expect(scheduler.submit(refresh, for: weather, kept: nil) == .submitted)
        #expect(scheduler.submit(WireTaskRequest(identifier: "prune", kind: .appRefresh), for: weather, kept: nil)
            == .refused("too many pending requests (tooManyPendingTaskRequests)"))
        #expect(scheduler.submit(WireTaskRequest(identifier: "refresh", kind: .appRefresh, earliestBeginDate: 2_000_000_060), for: weather, kept: nil)
            == .submitted, "a request replacing its own identifier's is not one more")
        #expect(scheduler.submit(WireTaskRequest(identifier: "prune", kind: .processing), for: try bundle(modes: ["fetch"]), kept: nil)
            == .refused("the request needs processing in UIBackgroundModes (notPermitted)"))
        #expect(scheduler.pendingCount == 1)
    }

    @Test func taskRegistrationRules() {
        let permitted = ["com.example.refresh"]
        #expect(Scheduler.registration("com.example.refresh", registered: [], launchFinished: false, permitted: permitted) == .accepted)
        #expect(Scheduler.registration("com.example.other", registered: [], launchFinished: false, permitted: permitted)
            == .ignored("registered com.example.other, which is not in BGTaskSchedulerPermittedIdentifiers; ignored"))
        guard case .terminated(let twice) = Scheduler.registration("com.example.refresh", registered: ["com.example.refresh"], launchFinished: false, permitted: permitted),
              case .terminated(let late) = Scheduler.registration("com.example.refresh", registered: [], launchFinished: true, permitted: permitted)
        else {
            Issue.record("registering twice or late must end the app")
            return
        }
        #expect(twice.kind == .taskRegistration && twice.reason.hasSuffix("twice"))
        #expect(late.kind == .taskRegistration && late.reason.contains("after application(_:didFinishLaunchingWithOptions:) returned"))
    }

    /// A request that can no longer run in this process (`run-task` refuses it too).
    @Test func anAppLacksAHandlerOnlyOnceItsLaunchIsOver() {
        #expect(!Scheduler.lacksHandler(weather(), for: "refresh"), "not running: its next launch may register it")
        #expect(!Scheduler.lacksHandler(weather(.launching, launchFinished: false), for: "refresh"))
        #expect(Scheduler.lacksHandler(weather(.background), for: "refresh"))
        #expect(!Scheduler.lacksHandler(weather(.background, registered: ["refresh"]), for: "refresh"))
    }

    @Test func aFetchIntervalNeedsTheFetchModeAndKeepsTheFloor() throws {
        let scheduler = try scheduler()
        #expect(scheduler.answerFetchInterval(60, modes: [.processing]) == .refused(
            "setMinimumBackgroundFetchInterval(_:) called, but Info.plist UIBackgroundModes has no fetch: the app gets no background fetch"))
        #expect(scheduler.answerFetchInterval(60, modes: [.fetch]) == .granted("at least \(Duration.seconds(900).formatted) between fetches"))
        #expect(scheduler.answerFetchInterval(3600, modes: [.fetch]) == .granted("at least \(Duration.seconds(3600).formatted) between fetches"))
        #expect(scheduler.answerFetchInterval(nil, modes: [.fetch]) == .granted("never"))
    }

    /// Only a notification with `"content-available": 1` wakes an app; its payload travels sorted.
    @Test func onlyABackgroundNotificationWakesAnApp() throws {
        let event = try Scheduler.backgroundNotification(Data(#"{"z": 1, "aps": {"content-available": 1}}"#.utf8), from: "p.json")
        #expect(event.kind == .remoteNotification)
        #expect(event.payload == #"{"aps":{"content-available":1},"z":1}"#)
        let notObject = #expect(throws: SupervisorError.self) { try Scheduler.backgroundNotification(Data("[1]".utf8), from: "p.json") }
        #expect(notObject?.message == #"p.json is not a JSON object (a notification payload such as {"aps": {"content-available": 1}})"#)
        let notBackground = #expect(throws: SupervisorError.self) {
            try Scheduler.backgroundNotification(Data(#"{"aps": {"alert": "hi"}}"#.utf8), from: "p.json")
        }
        #expect(notBackground?.message
            == #"p.json is not a background notification: its aps has no "content-available": 1, so iOS would not wake the app for it"#)
    }
}
