import AppHostProtocol
import Testing
@testable import AppHostRuntime

/// What a user's command may ask of the app (LifecycleMachine+Commands): the machine's refusal
/// is said exactly where `handle` would do nothing, so a command never reports what did not happen.
@Suite struct LifecycleCommandTests {
    @Test func eachRefusalIsWhereTheMachineWouldDoNothing() {
        var host = SimulatedHost()
        #expect(host.machine.refusal(of: .interrupt(nil)) == "is not in the foreground")
        #expect(host.machine.refusal(of: .terminate(byUser: true)) == "is not running")
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.machine.refusal(of: .interrupt(nil)) == nil)
        #expect(host.machine.refusal(of: .wakeInBackground) == "is active, not suspended")
        #expect(host.machine.refusal(of: .openSwitcher) == nil)
        host.send(.openSwitcher)
        #expect(host.state == .inactive)
        #expect(host.machine.refusal(of: .openSwitcher)
            == "is interrupted already (the app switcher is open, or a call): open or home first")
        host.send(.moveToBackground)
        #expect(host.state == .suspended)
        #expect(host.machine.refusal(of: .interrupt(nil)) == "is not in the foreground")
        #expect(host.machine.refusal(of: .wakeInBackground) == nil)
        #expect(host.machine.refusal(of: .terminate(byUser: true)) == nil)
        host.send(.terminate(byUser: true))
        #expect(host.machine.refusal(of: .terminate(byUser: true)) == "is not running")
    }

    @Test func expireFindsTheRunningTasksAndTheBackgroundTime() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        #expect(host.machine.expirable(identifier: nil).tasks.isEmpty)
        #expect(host.machine.expirable(identifier: nil).backgroundTasks == 0)
        host.send(.taskBegan(id: 1, name: "upload"))
        // In the foreground a background task has no background time to end.
        #expect(host.machine.expirable(identifier: nil).backgroundTasks == 0)
        host.send(.moveToBackground)
        #expect(host.machine.expirable(identifier: nil).backgroundTasks == 1)
        #expect(host.machine.expirable(identifier: "refresh").backgroundTasks == 0, "an identifier names a task, not background time")
    }
}

/// What the machine counts as a background wake-up (`ps`, the report): a launch into the
/// background and each resumption there, whatever resumed it; not a return to the foreground.
@Suite struct BackgroundWakeupTests {
    @Test func launchesIntoAndResumptionsInTheBackgroundCountAndNothingElse() {
        var host = SimulatedHost()
        host.send(.launch(.background, reason: "background"))
        #expect(host.machine.backgroundWakeups == 1)
        #expect(host.state == .suspended)
        host.send(.wakeInBackground)
        #expect(host.machine.backgroundWakeups == 2)
        host.send(.moveToForeground)
        #expect(host.state == .active)
        host.send(.moveToBackground)
        #expect(host.state == .suspended)
        #expect(host.machine.backgroundWakeups == 2, "a return to the foreground is not a background wake-up")
        host.send(.deliver(BackgroundEvent(kind: .fetch), reason: "backgroundFetch"))
        #expect(host.machine.backgroundWakeups == 3)
        host.send(.moveToForeground)
        // A wake the machine does not take (the app is active) is not counted.
        host.send(.wakeInBackground)
        #expect(host.machine.backgroundWakeups == 3)
    }
}
