import AppHostProtocol
import Testing
@testable import AppHostRuntime

/// When an app has settled (commands wait for it, Supervisor.settle), on the virtual clock.
@Suite struct SettlingTests {
    /// `isSettled`, asked after every input, is exactly `transition == nil` without its text.
    @Test func settledIsHavingNoTransitionAtEveryStep() {
        var host = SimulatedHost()
        var steps = 0
        func check(_ input: LifecycleMachine.Input) {
            host.send(input)
            steps += 1
            #expect(host.machine.isSettled == (host.machine.transition == nil), "after \(input): \(host.machine.transition ?? "settled")")
        }
        host.pluginLoads = false
        check(.launch(.foreground, reason: "user"))
        host.hangIn = [.didFinishLaunching]
        check(.ready)
        host.hangIn = []
        check(.acknowledged(id: host.machine.inFlight?.id ?? 0, returned: true, snapshot: nil))
        host.verifiesSuspension = false
        check(.moveToBackground)
        check(.suspensionVerified)
        host.hangIn = [.launchTask]
        check(.deliver(BackgroundEvent(kind: .appRefresh, taskIdentifier: "com.example.refresh"), reason: "backgroundTask"))
        check(.acknowledged(id: host.machine.inFlight?.id ?? 0, returned: nil, snapshot: nil))
        host.processDies = false
        check(.terminate(byUser: true))
        check(.exited(ProcessExit(status: .signaled(9, coreDumped: false))))
        #expect(steps == 9)
    }

    @Test func anAppSettlesOnlyOnceItsLaunchIsOver() {
        var host = SimulatedHost()
        host.pluginLoads = false
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.machine.transition == "loading its plugin")
        host.hangIn = [.didFinishLaunching]
        host.send(.ready)
        #expect(host.machine.transition == "launching, in application(_:didFinishLaunchingWithOptions:)")
        host.hangIn = []
        host.send(.acknowledged(id: host.machine.inFlight?.id ?? 0, returned: true, snapshot: nil))
        #expect(host.state == .active)
        #expect(host.machine.isSettled)
    }

    @Test func anAppSettlesOnceSuspendedOrHeldByItsOwnWork() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.verifiesSuspension = false
        host.send(.moveToBackground)
        #expect(host.machine.transition == "being suspended")
        host.send(.suspensionVerified)
        #expect(host.machine.isSettled)
        // Resumed for a task: in flight until the launch handler returns, then held by the task.
        host.hangIn = [.launchTask]
        host.send(.deliver(BackgroundEvent(kind: .appRefresh, taskIdentifier: "com.example.refresh"), reason: "backgroundTask"))
        #expect(host.machine.transition == "in the BGTaskScheduler launch handler")
        host.send(.acknowledged(id: host.machine.inFlight?.id ?? 0, returned: nil, snapshot: nil))
        #expect(host.state == .background)
        #expect(host.machine.isSettled, "the task holds it in the background: the host waits for nothing")
    }

    @Test func aBackgroundLaunchOpenedBeforeItLoadedComesToTheForeground() {
        var host = SimulatedHost()
        host.pluginLoads = false
        host.send(.deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"))
        host.send(.moveToForeground)
        host.send(.ready)
        #expect(host.callbacks == [
            "willFinishLaunching background", "didFinishLaunching background", "willEnterForeground background", "didBecomeActive active",
        ])
        #expect(host.machine.isSettled)
        host.callbacks = []
        host.send(.moveToBackground)
        #expect(host.callbacks.prefix(3) == ["willResignActive active", "didEnterBackground background", "performFetch background"])
    }

    @Test func anEndingAppHasNotSettledUntilItsProcessIsGone() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.processDies = false
        host.send(.terminate(byUser: true))
        #expect(host.machine.transition == "being terminated")
        host.send(.exited(ProcessExit(status: .signaled(9, coreDumped: false))))
        #expect(host.machine.isSettled)
    }
}
