import AppHostProtocol
import Testing
@testable import AppHostRuntime

/// Drives a LifecycleMachine as the supervisor would, with a virtual clock and a simulated app
/// that acknowledges callbacks at once unless told to hang in one.
struct SimulatedHost {
    var machine: LifecycleMachine
    var now = HostInstant(nanoseconds: 1_000_000_000)
    /// Callbacks the app received, with the state it observed: "didBecomeActive active".
    var callbacks: [String] = []
    var events: [String] = []
    /// The events with their details: "call call C ended".
    var eventLines: [String] = []
    var expirations: [[UInt64]] = []
    /// Background work delivered (its number), and work whose expiration handler was run.
    var work: [UInt64] = []
    var workExpirations: [UInt64] = []
    var finished: Termination?
    var kills = 0
    /// SIGKILLs sent again because the process outlived its kill.
    var escalations = 0
    /// False: the process outlives every kill (stuck in the kernel) until the test says it ended.
    var processDies = true
    var frozen = false
    /// The app does not return from these callbacks.
    var hangIn: Set<WireCallback> = []
    var returnsFalseFrom: Set<WireCallback> = []
    /// False: the app process never says it is ready (its plugin hangs while loading).
    var pluginLoads = true
    /// False: a freeze stays unverified until the test sends `.suspensionVerified`.
    var verifiesSuspension = true
    /// False: the main thread never answers a watchdog's sample signal.
    var answersSample = true
    /// The main thread is blocked: expiration handlers never begin.
    var mainThreadBlocked = false
    /// Expiration handlers begin but never return.
    var expirationHandlersHang = false
    /// The expiration handler ends these tasks, and the app is frozen before it returns.
    var expirationHandlerEnds: [UInt64] = []
    /// Main-thread backtraces asked for, by watchdogs.
    var samples = 0
    /// Audio interruptions posted in the app: true for began, false for ended.
    var audioInterruptions: [Bool] = []
    /// The app reports this call while a VoIP push's callback runs (nil: it reports none).
    var callReportedInPush: String? = "CALL-1"
    /// The callbacks the app process's configuration carried, as the supervisor takes them
    /// from the machine when it spawns the process (an app-delegate app's: with the launch's
    /// didBecomeActive, unless `activating` is false, as for a scene app).
    var configuredCallbacks: [WireCallbackRequest] = []
    var activating: Bool {
        get { machine.activatesOnLaunch }
        set { machine.activatesOnLaunch = newValue }
    }
    /// The configured callbacks the host withdrew, by id.
    var withdrawals: [UInt64] = []
    /// The app has begun the configured didBecomeActive by the time a withdrawal reaches it.
    var withdrawalComesLate = false
    /// The callback the app hangs in (`hangIn`), until `returnFromHang()`.
    var hung: WireCallbackRequest?

    init(policy: Policy = Policy(), continuousModes: Set<ContinuousMode> = []) {
        machine = LifecycleMachine(policy: policy, continuousModes: continuousModes)
    }

    var state: AppState { machine.state }

    mutating func send(_ input: LifecycleMachine.Input) {
        var queue = [input]
        while !queue.isEmpty {
            let next = queue.removeFirst()
            // A plain acknowledgement of didFinishLaunching: the app does not run the configured
            // activation (withdrawn, or a test's own acknowledgement).
            if case .acknowledged = next, configuredCallbacks.first?.callback == .didBecomeActive { configuredCallbacks = [] }
            for action in machine.handle(next, now: now) {
                switch action {
                case .spawn(_, let callbacks):
                    configuredCallbacks = callbacks
                    if pluginLoads { queue.append(.ready) }
                case .send(let request), .began(let request):
                    // The app runs the requests its configuration carried, in their order, and
                    // the host writes none of them.
                    if case .began = action {
                        #expect(request == configuredCallbacks.first)
                        configuredCallbacks = Array(configuredCallbacks.dropFirst())
                    } else {
                        #expect(!configuredCallbacks.contains { $0.id == request.id }, "\(request.callback) written, and run from the configuration")
                    }
                    callbacks.append("\(request.callback.rawValue) \(name(request.state))")
                    if let event = request.event { work.append(event.work) }
                    if request.callback == .didReceiveIncomingPush, let call = callReportedInPush { queue.append(.callReported(call)) }
                    if hangIn.contains(request.callback) {
                        hung = request
                    } else {
                        queue.append(returning(from: request))
                    }
                case .withdraw(let id):
                    #expect(id == configuredCallbacks.last?.id && configuredCallbacks.last?.callback == .didBecomeActive)
                    withdrawals.append(id)
                case .expire(let ids, _):
                    expirations.append(ids)
                    // The SDK runs the handlers on the main thread and says when they begin and return.
                    if !mainThreadBlocked { queue.append(.expirationHandlers(taskIDs: ids, returned: false)) }
                    queue += expirationHandlerEnds.map { .taskEnded(id: $0) }
                    if !mainThreadBlocked && !expirationHandlersHang && expirationHandlerEnds.isEmpty {
                        queue.append(.expirationHandlers(taskIDs: ids, returned: true))
                    }
                case .expireWork(let id):
                    workExpirations.append(id)
                case .audioInterruption(let began):
                    audioInterruptions.append(began)
                case .freeze:
                    frozen = true
                    if verifiesSuspension { queue.append(.suspensionVerified) }
                case .thaw:
                    frozen = false
                case .sampleMainThread:
                    samples += 1
                    if answersSample { queue.append(.mainThreadSampled) }
                case .kill:
                    kills += 1
                    if processDies { queue.append(.exited(ProcessExit(status: .signaled(9, coreDumped: false)))) }
                case .escalateKill:
                    escalations += 1
                    if processDies { queue.append(.exited(ProcessExit(status: .signaled(9, coreDumped: false)))) }
                case .event(let event):
                    events.append(event.name.rawValue)
                    eventLines.append("\(event.name.rawValue) \(event.detail ?? "")")
                case .finished(let termination, _):
                    finished = termination
                }
            }
        }
    }

    /// The app's acknowledgement of `request`, as the SDK sends it: after didFinishLaunching,
    /// the configured didBecomeActive runs next unless the host withdrew it in time.
    private mutating func returning(from request: WireCallbackRequest) -> LifecycleMachine.Input {
        let returned = !returnsFalseFrom.contains(request.callback)
        if request.callback == .didFinishLaunching, returned, configuredCallbacks.first?.callback == .didBecomeActive {
            if withdrawals.isEmpty || withdrawalComesLate { return .acknowledgedThenNext(id: request.id) }
        }
        return .acknowledged(id: request.id, returned: returned, snapshot: request.callback == .snapshot ? "window" : nil)
    }

    /// The callback the app hung in returns now.
    mutating func returnFromHang() {
        guard let request = hung else { return }
        hung = nil
        hangIn.remove(request.callback)
        let input = returning(from: request)
        send(input)
    }

    /// Moves the clock forward, delivering `.tick` at each deadline on the way.
    mutating func advance(by duration: Duration) {
        let target = now + duration
        while let deadline = machine.nextDeadline, deadline <= target {
            now = max(now, deadline)
            send(.tick)
        }
        now = target
    }

    private func name(_ state: WireApplicationState) -> String {
        switch state {
        case .active: "active"
        case .inactive: "inactive"
        case .background: "background"
        }
    }
}

@Suite struct LifecycleMachineSequenceTests {
    @Test func sequence1LaunchToTheForeground() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.callbacks == ["willFinishLaunching inactive", "didFinishLaunching inactive", "didBecomeActive active"])
        #expect(host.state == .active)
        #expect(host.events == ["launching", "loaded", "willFinishLaunching", "didFinishLaunching", "didBecomeActive"])
    }

    @Test func sequence2And3ToTheBackgroundAndBack() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.callbacks = []
        host.send(.moveToBackground)
        #expect(host.callbacks == ["willResignActive active", "didEnterBackground background", "snapshot background"])
        #expect(host.state == .suspended)
        #expect(host.frozen)
        host.callbacks = []
        host.send(.moveToForeground)
        #expect(!host.frozen, "resumed before any callback")
        #expect(host.callbacks == ["willEnterForeground background", "didBecomeActive active"])
        #expect(host.state == .active)
    }

    @Test func sequence4InterruptionEndsAfterItsDuration() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.callbacks = []
        host.send(.interrupt(.seconds(3)))
        #expect(host.callbacks == ["willResignActive active"])
        #expect(host.state == .inactive)
        host.advance(by: .milliseconds(2999))
        #expect(host.state == .inactive)
        host.advance(by: .milliseconds(1))
        #expect(host.callbacks == ["willResignActive active", "didBecomeActive active"])
    }

    @Test func sequence5LaunchIntoTheBackground() {
        var host = SimulatedHost()
        host.send(.launch(.background, reason: "background"))
        #expect(host.callbacks == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background", "snapshot background",
        ])
        #expect(host.state == .suspended)
    }

    @Test func sequence6ResumedIntoTheBackgroundAndSuspendedAgain() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.callbacks = []
        host.send(.wakeInBackground)
        #expect(host.callbacks == ["didEnterBackground background", "snapshot background"])
        #expect(host.state == .suspended)
        #expect(host.events.suffix(4) == ["resumed", "didEnterBackground", "snapshot", "suspended"])
    }

    @Test func wakingAnAppThatIsNotRunningLaunchesItIntoTheBackground() {
        var host = SimulatedHost()
        host.send(.wakeInBackground)
        #expect(host.callbacks.first == "willFinishLaunching background")
        #expect(host.state == .suspended)
    }

    @Test func sequence7TerminatingARunningApp() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.terminate(byUser: true))
        // Through the app switcher: it resigns active first.
        #expect(host.callbacks.suffix(2) == ["willResignActive active", "willTerminate inactive"])
        #expect(host.finished?.kind == .userTerminated)
        #expect(host.state == .terminated)
        #expect(host.machine.finalState == .inactive)
    }

    @Test func sequence7TerminatingASuspendedAppHasNoCallback() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        let before = host.callbacks
        host.send(.terminate(byUser: true))
        #expect(host.callbacks == before)
        #expect(host.finished?.kind == .forceQuit)
        #expect(host.machine.finalState == .suspended)
    }

    @Test func aMemoryWarningWaitsForTheRunningCallback() {
        var host = SimulatedHost()
        host.hangIn = [.didEnterBackground]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.send(.memoryWarning)
        #expect(host.callbacks.last == "didEnterBackground background", "one callback at a time")
    }
}

/// The launch's first didBecomeActive comes with the configuration, and the app runs it right
/// after didFinishLaunching unless the host withdrew it: the sequences stay those of a launch
/// whose host sends it.
@Suite struct ConfiguredActivationTests {
    @Test func aForegroundLaunchCarriesItsActivation() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.callbacks == ["willFinishLaunching inactive", "didFinishLaunching inactive", "didBecomeActive active"])
        #expect(host.configuredCallbacks.isEmpty, "every configured callback was taken as sent")
        #expect(host.withdrawals.isEmpty)
        #expect(host.state == .active)
    }

    @Test func aBackgroundLaunchOrASceneAppCarriesNone() {
        var background = SimulatedHost()
        background.hangIn = [.willFinishLaunching]
        background.send(.launch(.background, reason: "backgroundFetch"))
        #expect(background.configuredCallbacks.map(\.callback) == [.didFinishLaunching])
        var scenes = SimulatedHost()
        scenes.activating = false
        scenes.hangIn = [.willFinishLaunching]
        scenes.send(.launch(.foreground, reason: "user"))
        #expect(scenes.configuredCallbacks.map(\.callback) == [.didFinishLaunching])
    }

    /// Whatever changes while the app launches withdraws it, and the app then sees exactly what
    /// it would have seen without it.
    /// (Sent home and opened again, or interrupted and back: the host withdraws it, then sends it.)
    @Test(arguments: [
        [LifecycleMachine.Input.terminate(byUser: true)], [.terminate(byUser: false)], [.moveToBackground], [.interrupt(nil)],
        [.openSwitcher], [.memoryWarning], [.moveToBackground, .moveToForeground], [.interrupt(nil), .endInterruption],
    ])
    func aChangeDuringTheLaunchWithdrawsIt(changes: [LifecycleMachine.Input]) {
        var hosts = [SimulatedHost(), SimulatedHost()]
        hosts[1].activating = false
        for index in hosts.indices {
            hosts[index].hangIn = [.didFinishLaunching]
            hosts[index].send(.launch(.foreground, reason: "user"))
            for change in changes { hosts[index].send(change) }
            hosts[index].returnFromHang()
        }
        #expect(hosts[0].withdrawals == [3])
        #expect(hosts[0].callbacks == hosts[1].callbacks)
        #expect(hosts[0].events == hosts[1].events)
        #expect(hosts[0].state == hosts[1].state)
    }

    @Test func aChangeThatLeavesTheAppInTheForegroundKeepsIt() {
        var host = SimulatedHost()
        host.hangIn = [.didFinishLaunching]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToForeground)
        host.send(.taskBegan(id: 1, name: "upload"))
        host.returnFromHang()
        #expect(host.withdrawals.isEmpty)
        #expect(host.callbacks.last == "didBecomeActive active")
        #expect(host.configuredCallbacks.isEmpty)
    }

    /// A withdrawal that reaches the app after it has begun didBecomeActive changes nothing of
    /// it: the change is then the next step's, as if it had come during didBecomeActive.
    @Test func aWithdrawalTooLateLeavesTheChangeToTheNextStep() {
        var host = SimulatedHost()
        host.withdrawalComesLate = true
        host.hangIn = [.didFinishLaunching]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.terminate(byUser: true))
        host.returnFromHang()
        #expect(host.withdrawals == [3])
        #expect(host.callbacks == [
            "willFinishLaunching inactive", "didFinishLaunching inactive", "didBecomeActive active", "willResignActive active",
            "willTerminate inactive",
        ])
        #expect(host.finished?.kind == .userTerminated)
    }

    /// What a hostile app may send: an activation its configuration did not carry, or one out of turn.
    @Test(arguments: ["scene app", "background launch", "after willFinishLaunching", "wrong id", "after a plain ack", "twice"])
    func runningAnActivationOutOfTurnIsAProtocolViolation(when: String) {
        var host = SimulatedHost()
        host.hangIn = [when == "after willFinishLaunching" ? .willFinishLaunching : .didFinishLaunching]
        host.activating = when != "scene app"
        host.send(.launch(when == "background launch" ? .background : .foreground, reason: "user"))
        var id = host.hung?.id ?? 0
        switch when {
        case "wrong id": id = 99
        case "after a plain ack":
            host.hangIn = [.didBecomeActive]
            host.send(.acknowledged(id: id, returned: true, snapshot: nil))
        case "twice":
            host.returnFromHang()
            #expect(host.state == .active)
        default: break
        }
        host.send(.acknowledgedThenNext(id: id))
        #expect(host.finished?.kind == .protocolViolation)
        #expect(host.finished?.reason == "broke the control protocol: it ran a callback after callback \(id) that its configuration did not carry")
    }
}

@Suite struct LifecycleMachineBudgetTests {
    @Test(arguments: [WireCallback.didEnterBackground, .willTerminate])
    func fiveSecondWatchdogsFireAtExactlyTheirBudget(callback: WireCallback) {
        var host = SimulatedHost()
        host.hangIn = [callback]
        host.send(.launch(.foreground, reason: "user"))
        host.send(callback == .willTerminate ? .terminate(byUser: true) : .moveToBackground)
        host.advance(by: .milliseconds(4999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.watchdog.rawValue)
        #expect(host.finished?.reason == "did not return from \(callback.delegateMethodName) within 5.0 s")
        #expect(host.kills == 1)
    }

    @Test func aWatchdogAsksForTheMainThreadsBacktraceThenKillsWhenItComes() {
        var host = SimulatedHost()
        host.hangIn = [.didEnterBackground]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(5))
        #expect(host.samples == 1)
        #expect(host.kills == 1, "the answer ends the wait at once")
        #expect(host.finished?.kind == .watchdog)
    }

    @Test func aWatchdogKillsAfterTheSampleTimeoutWhenTheAppDoesNotAnswer() {
        var host = SimulatedHost()
        host.hangIn = [.didEnterBackground]
        host.answersSample = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(5))
        #expect(host.samples == 1)
        #expect(host.kills == 0)
        #expect(host.machine.isEnding, "the termination is decided while the backtrace is awaited")
        host.advance(by: LifecycleMachine.mainThreadSampleTimeout - .milliseconds(1))
        #expect(host.kills == 0)
        host.advance(by: .milliseconds(1))
        #expect(host.kills == 1)
        #expect(host.finished?.kind == .watchdog)
    }

    @Test func anAppThatDiesWhileSampledIsStillAWatchdogKill() {
        // What the app process does in answer (its own handler, app code too) cannot change
        // how it is reported: the termination was decided before the sample signal.
        var host = SimulatedHost()
        host.hangIn = [.didEnterBackground]
        host.answersSample = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(5))
        host.send(.exited(ProcessExit(status: .signaled(11, coreDumped: false))))
        #expect(host.finished?.kind == .watchdog)
        #expect(host.finished?.code == TerminationCode.watchdog.rawValue)
        host.send(.mainThreadSampled)
        #expect(host.kills == 0)
    }

    @Test func theLaunchBudgetSpansEveryLaunchCallback() {
        var host = SimulatedHost()
        host.hangIn = [.didFinishLaunching]
        host.send(.launch(.foreground, reason: "user"))
        host.advance(by: .milliseconds(19_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.reason == "did not finish launching within 20.0 s: application(_:didFinishLaunchingWithOptions:) had not returned")
    }

    @Test func aPluginThatNeverLoadsMissesTheLaunchBudget() {
        var host = SimulatedHost()
        host.pluginLoads = false
        host.send(.launch(.foreground, reason: "user"))
        host.advance(by: .milliseconds(19_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.reason == "did not finish launching within 20.0 s: the plugin had not loaded")
        #expect(host.callbacks.isEmpty)
    }

    @Test func otherCallbacksGetTenSeconds() {
        var host = SimulatedHost()
        host.hangIn = [.willEnterForeground]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.send(.moveToForeground)
        host.advance(by: .milliseconds(9999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.reason == "did not return from applicationWillEnterForeground(_:) within 10.0 s")
    }

    @Test func backgroundTimeExpiresThenKillsWith2182bad2() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: "upload"))
        host.send(.moveToBackground)
        #expect(host.state == .background, "an open task keeps the app running")
        host.advance(by: .milliseconds(24_999))
        #expect(host.expirations.isEmpty)
        host.advance(by: .milliseconds(1))
        #expect(host.expirations == [[1]])
        host.advance(by: .milliseconds(9_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.backgroundTimeExhausted.rawValue)
        #expect(host.finished?.reason == "background task #1 \"upload\" still open 5.0 s after its background time (30.0 s) ran out")
    }

    /// Apple: expiration handlers must run in "less than a second or so".
    @Test func aSlowExpirationHandlerIsEndedByTheWatchdog() {
        var host = SimulatedHost()
        host.expirationHandlersHang = true
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: "upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(25))
        #expect(host.expirations == [[1]])
        host.advance(by: .milliseconds(999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.watchdog.rawValue)
        #expect(host.finished?.reason == "the expiration handler of background task #1 \"upload\" did not return within 1.0 s; expiration handlers must finish in about a second")
        #expect(host.samples == 1, "with the main thread's backtrace")
    }

    @Test func aBlockedMainThreadIsNamedAsWhyTheExpirationHandlerDidNotRun() {
        var host = SimulatedHost()
        host.mainThreadBlocked = true
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: "upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(35))
        #expect(host.finished?.code == TerminationCode.backgroundTimeExhausted.rawValue)
        #expect(host.finished?.reason == "background task #1 \"upload\" still open 5.0 s after its background time (30.0 s) ran out; "
            + "its expiration handler could not run: the main thread was blocked, not answering for 35.0 s (since the snapshot was taken)")
    }

    /// The usual handler ends its task; the app is frozen the moment the last one ends, maybe
    /// before its handler has returned: it is not timed while suspended.
    @Test func aHandlerThatEndsTheLastTaskIsSuspendedNotKilled() {
        var host = SimulatedHost()
        host.expirationHandlerEnds = [1]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: "upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(25))
        #expect(host.state == .suspended)
        host.advance(by: .seconds(60))
        #expect(host.finished == nil)
        #expect(host.state == .suspended)
    }

    @Test func expirationHandlersThatReturnInTimeChangeNothing() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: "upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(25))
        host.send(.taskEnded(id: 1))
        #expect(host.state == .suspended)
        #expect(host.finished == nil)
    }

    @Test func endingEveryTaskSuspends() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.send(.moveToForeground)
        host.send(.taskBegan(id: 1, name: nil))
        host.send(.taskBegan(id: 2, name: nil))
        host.send(.moveToBackground)
        host.advance(by: .seconds(26))
        #expect(host.expirations == [[1, 2]])
        host.send(.taskEnded(id: 1))
        #expect(host.state == .background)
        host.send(.taskEnded(id: 2))
        #expect(host.state == .suspended)
        host.advance(by: .seconds(60))
        #expect(host.finished == nil)
    }

    @Test func theBudgetStartsOnEnteringTheBackgroundAndIsPerApp() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: nil))
        host.send(.taskBegan(id: 2, name: nil))
        host.advance(by: .seconds(100))  // foreground time does not count
        host.send(.moveToBackground)
        #expect(host.machine.backgroundTimeRemaining(at: host.now) == .seconds(30))
        host.advance(by: .seconds(35))
        #expect(host.finished?.code == TerminationCode.backgroundTimeExhausted.rawValue, "two tasks do not give 60 s")
    }

    @Test func returningToTheForegroundResetsTheBudget() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.taskBegan(id: 1, name: nil))
        host.send(.moveToBackground)
        host.advance(by: .seconds(20))
        host.send(.moveToForeground)
        #expect(host.machine.backgroundTimeRemaining(at: host.now) == nil)
        host.advance(by: .seconds(40))
        host.send(.moveToBackground)
        host.advance(by: .milliseconds(24_999))
        #expect(host.expirations.isEmpty)
        host.advance(by: .milliseconds(1))
        #expect(host.expirations == [[1]])
    }

    @Test func moreThanTheTaskLimitKillsWithBada5e47() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        for id in 1...1000 { host.send(.taskBegan(id: UInt64(id), name: nil)) }
        #expect(host.finished == nil)
        host.send(.taskBegan(id: 1001, name: nil))
        #expect(host.finished?.code == TerminationCode.tooManyBackgroundTasks.rawValue)
    }

    @Test func aLaunchMethodReturningFalseFailsTheLaunch() {
        var host = SimulatedHost()
        host.returnsFalseFrom = [.willFinishLaunching]
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.finished?.kind == .launchFailed)
        #expect(host.callbacks == ["willFinishLaunching inactive"])
    }

    @Test func aCrashInsideACallbackNamesIt() {
        var host = SimulatedHost()
        host.hangIn = [.didBecomeActive]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.exited(ProcessExit(status: .signaled(11, coreDumped: false))))
        #expect(host.finished == Termination(kind: .crash, namespace: .signal, code: 11, reason: "crashed (SIGSEGV) in applicationDidBecomeActive(_:)"))
        #expect(host.machine.finalState == .active)
    }

    @Test func anAcknowledgementOfNothingIsAProtocolViolation() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.acknowledged(id: 99, returned: nil, snapshot: nil))
        #expect(host.finished?.kind == .protocolViolation)
    }
}

/// Random command sequences under random timing: the machine's invariants hold in every one.
@Suite struct LifecycleMachineExplorationTests {
    @Test func invariantsHoldOverThousandsOfRandomRuns() {
        var generator = SplitMix(seed: 0x5EED)
        let inputs: [LifecycleMachine.Input] = [
            .moveToForeground, .moveToBackground, .interrupt(.seconds(2)), .interrupt(nil), .endInterruption,
            .memoryWarning, .taskBegan(id: 1, name: nil), .taskBegan(id: 2, name: nil), .taskEnded(id: 1),
            .taskEnded(id: 2), .terminate(byUser: true), .wakeInBackground,
            .deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"),
            .deliver(BackgroundEvent(kind: .remoteNotification, payload: "{}"), reason: "remoteNotification"),
            .deliver(BackgroundEvent(kind: .processing, taskIdentifier: "p", requiresExternalPower: true), reason: "backgroundTask"),
            .workCompleted(id: 1, result: "newData"), .workCompleted(id: 2, result: "success"),
            .expireWork(ids: nil, reason: "test"), .expireBackgroundTime,
            .conditionsChanged(externalPower: false, network: true),
            .audio(active: true, playing: true), .audio(active: true, playing: false), .audioInterruption(began: true),
            .audioInterruption(began: false), .backgroundLocation(true, why: "on"), .backgroundLocation(false, why: "off"),
            .callReported("A"), .callEnded("A"),
            .deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"),
        ]
        for _ in 0..<3000 {
            var machine = LifecycleMachine(policy: Policy(), continuousModes: [.audio, .location, .voip])
            var now = HostInstant(nanoseconds: 0)
            var pending: [UInt64] = []  // callbacks sent and not yet acknowledged
            // The launch's didBecomeActive the configuration carried, withdrawn or not; and
            // didFinishLaunching's id, which the app may acknowledge by running it.
            var activation: WireCallbackRequest?
            var withdrawn = false
            var didFinishID: UInt64?
            var killed = 0
            var finished = 0
            var exited = false
            var queue: [LifecycleMachine.Input] = [.launch(generator.next() % 2 == 0 ? .foreground : .background, reason: "user")]
            for step in 0..<60 {
                if queue.isEmpty {
                    switch generator.next() % 4 {
                    case 0 where !pending.isEmpty:
                        let id = pending.removeFirst()
                        // The SDK runs the configured activation unless the withdrawal came first
                        // (or, at random, came too late).
                        if id == didFinishID, activation != nil, !withdrawn || generator.next() % 2 == 0 {
                            queue.append(.acknowledgedThenNext(id: id))
                        } else {
                            queue.append(.acknowledged(id: id, returned: true, snapshot: nil))
                        }
                    case 1:
                        now = now + .milliseconds(Int64(generator.next() % 40_000))
                        queue.append(.tick)
                    default:
                        let input = inputs[Int(generator.next() % UInt64(inputs.count))]
                        // A frozen app sends nothing; only the host's commands reach it.
                        if machine.state == .suspended {
                            switch input {
                            case .taskBegan, .audio, .callReported, .callEnded, .backgroundLocation: continue
                            default: break
                            }
                        }
                        queue.append(input)
                    }
                }
                let input = queue.removeFirst()
                // An app-delegate app or a scene app, at random, for each launch.
                if case .launch = input { machine.activatesOnLaunch = generator.next() % 2 == 0 }
                if case .deliver = input { machine.activatesOnLaunch = generator.next() % 2 == 0 }
                for action in machine.handle(input, now: now) {
                    switch action {
                    case .spawn(_, let callbacks):
                        activation = callbacks.dropFirst(2).first
                        withdrawn = false
                        queue.append(.ready)
                    case .send(let request), .began(let request):
                        #expect(pending.isEmpty, "one callback at a time (step \(step))")
                        pending.append(request.id)
                        if request.callback == .didFinishLaunching { didFinishID = request.id }
                    case .withdraw(let id):
                        #expect(id == activation?.id && !withdrawn, "one withdrawal, of the configured activation")
                        withdrawn = true
                    case .freeze: queue.append(.suspensionVerified)
                    case .sampleMainThread:
                        pending = []
                        queue.append(.mainThreadSampled)
                    case .kill(let termination):
                        #expect(termination.kind != .protocolViolation, "the app kept to the protocol: \(termination.reason)")
                        killed += 1
                        pending = []
                        queue.append(.exited(ProcessExit(status: .signaled(9, coreDumped: false))))
                    case .finished:
                        finished += 1
                        exited = true
                    case .thaw, .expire, .expireWork, .event, .escalateKill, .audioInterruption: break
                    }
                }
                #expect(killed <= 1 && finished <= 1)
                if exited { break }
                if machine.state == .suspended {
                    #expect(machine.openTasks.isEmpty, "a suspended app holds no task")
                    #expect(machine.work.isEmpty, "a suspended app has no background work under way")
                    #expect(machine.holds.isEmpty, "a suspended app is held by no continuous mode")
                }
                // Every input leaves no deadline behind it: what was due has been dealt with.
                if let deadline = machine.nextDeadline {
                    #expect(deadline.nanoseconds >= now.nanoseconds, "a deadline left in the past after \(input) (step \(step))")
                }
            }
            if killed == 1 { #expect(finished == 1, "every kill ends in exactly one report") }
        }
    }
}

/// A small seeded generator, so a failing exploration can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
