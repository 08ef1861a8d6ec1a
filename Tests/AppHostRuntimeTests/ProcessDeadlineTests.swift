import AppHostProtocol
import Testing
@testable import AppHostRuntime

/// The deadlines the host keeps around an app process rather than a callback: verifying a
/// freeze, escalating a kill, and the grace after the control socket closes. All live in the
/// machine, so each is exact on a virtual clock.
@Suite struct ProcessDeadlineTests {
    /// Regression: `terminate APP` while the freeze was unverified returned no action and armed
    /// no deadline, so `terminate` and shutdown hung until a second Ctrl-C.
    @Test(arguments: [true, false])
    func terminatingAnAppBeingSuspendedEndsItWithoutACallback(byUser: Bool) {
        var host = SimulatedHost()
        host.verifiesSuspension = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        #expect(host.machine.phase == .suspending)
        let before = host.callbacks
        host.send(.terminate(byUser: byUser))
        #expect(host.callbacks == before, "a freezing app runs no callback")
        #expect(host.kills == 1)
        #expect(host.finished?.kind == (byUser ? .forceQuit : .hostShutdown))
        #expect(host.finished?.reason == (byUser
            ? "force quit by the user while being suspended (no callback)"
            : "the host shut down; the app, being suspended, was ended without a callback"))
        #expect(host.state == .terminated)
    }

    @Test func anAppThatNeverDiesIsKilledAgainEverySecondUntilItEnds() {
        var host = SimulatedHost()
        host.processDies = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.terminate(byUser: true))
        #expect(host.kills == 1)
        host.advance(by: .milliseconds(999))
        #expect(host.escalations == 0)
        host.advance(by: .milliseconds(1))
        #expect(host.escalations == 1)
        host.advance(by: .seconds(3))
        #expect(host.escalations == 4)
        host.send(.exited(ProcessExit(status: .signaled(9, coreDumped: false))))
        #expect(host.finished?.kind == .userTerminated)
        #expect(host.machine.nextDeadline == nil, "nothing is left to wait for")
    }

    @Test func aForbiddenCallsSigsysIsFollowedBySigkillAfter100Milliseconds() {
        var host = SimulatedHost()
        host.processDies = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.enforce(Termination(kind: .forbiddenSyscall, namespace: .sandbox, code: 31, reason: "ptrace")))
        host.advance(by: .milliseconds(99))
        #expect(host.escalations == 0)
        host.advance(by: .milliseconds(1))
        #expect(host.escalations == 1)
        #expect(host.machine.isEnding)
    }

    @Test func aFreezeThatIsNeverVerifiedEndsTheAppAtTheSuspendTimeout() {
        var policy = Policy()
        policy.suspendTimeout = .milliseconds(300)
        var host = SimulatedHost(policy: policy)
        host.verifiesSuspension = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.advance(by: .milliseconds(299))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.kind == .suspensionFailed)
        #expect(host.finished?.reason == "could not be suspended: not every thread had stopped 0.3 s after the host began to suspend it")
        #expect(host.machine.finalState == .background)
    }

    @Test func aVerifiedFreezeDisarmsTheSuspendTimeout() {
        var host = SimulatedHost()
        host.verifiesSuspension = false
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        host.send(.suspensionVerified)
        #expect(host.state == .suspended)
        #expect(host.machine.nextDeadline == nil, "a suspended app costs the host no timer")
    }

    @Test func aClosedControlSocketIsAViolationOnlyIfTheProcessLivesOnPastTheGrace() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.controlClosed)
        host.advance(by: .milliseconds(499))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.kind == .protocolViolation)
        #expect(host.finished?.reason == "broke the control protocol: it closed its control socket")

        var dying = SimulatedHost()
        dying.send(.launch(.foreground, reason: "user"))
        dying.send(.controlClosed)
        dying.send(.exited(ProcessExit(status: .exited(0))))
        #expect(dying.finished?.kind == .exit, "a process that ends within the grace is an exit, not a violation")
    }
}
