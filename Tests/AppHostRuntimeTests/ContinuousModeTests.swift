import AppHostProtocol
import Testing
@testable import AppHostRuntime

/// Continuous background modes in the life-cycle machine, on a virtual clock: audio, location and
/// a VoIP call each hold an app running in the background only while it does that work, and only
/// when it declares the mode; the VoIP rules (0xbaadca11, 0xbad22222).
@Suite struct ContinuousModeMachineTests {
    static let allModes: Set<ContinuousMode> = [.audio, .location, .voip]

    /// An app in the foreground, declaring `modes`.
    static func activeApp(_ modes: Set<ContinuousMode> = allModes, policy: Policy = Policy()) -> SimulatedHost {
        var host = SimulatedHost(policy: policy, continuousModes: modes)
        host.send(.launch(.foreground, reason: "user"))
        host.callbacks = []
        host.events = []
        return host
    }

    @Test func playingAudioKeepsTheAppRunningInTheBackgroundUntilItStops() {
        var host = Self.activeApp()
        host.send(.audio(active: true, playing: true))
        host.send(.moveToBackground)
        #expect(host.callbacks == ["willResignActive active", "didEnterBackground background", "snapshot background"])
        #expect(host.state == .background)
        #expect(host.machine.holds == [.audio])
        host.advance(by: .seconds(3600))
        #expect(host.state == .background, "no budget: it runs as long as it plays")
        #expect(host.finished == nil)
        host.send(.audio(active: true, playing: false))
        #expect(host.state == .suspended, "suspended at once when it stops")
        #expect(host.events.suffix(2) == ["audio", "suspended"])
    }

    @Test func withoutTheModeOrWhenNotPlayingNothingChanges() {
        var undeclared = Self.activeApp([])
        undeclared.send(.audio(active: true, playing: true))
        #expect(undeclared.machine.holds.isEmpty)
        undeclared.send(.moveToBackground)
        #expect(undeclared.state == .suspended)

        var silent = Self.activeApp()
        silent.send(.audio(active: true, playing: false))
        silent.send(.moveToBackground)
        #expect(silent.state == .suspended, "an active session that plays nothing holds nothing")
    }

    @Test func backgroundTasksKeepTheirLimitsWhileAudioHolds() {
        var policy = Policy()
        policy.backgroundTime = .seconds(10)
        var host = Self.activeApp(policy: policy)
        host.send(.audio(active: true, playing: true))
        host.send(.taskBegan(id: 1, name: "Upload"))
        host.send(.moveToBackground)
        host.advance(by: .seconds(5))
        #expect(host.expirations == [[1]], "the expiration handler runs on time")
        host.advance(by: .seconds(11))
        #expect(host.finished?.code == TerminationCode.backgroundTimeExhausted.rawValue, "the task's budget holds whatever else runs")
    }

    @Test func endingTheTaskLeavesTheAppHeldByAudioNotSuspended() {
        var host = Self.activeApp()
        host.send(.taskBegan(id: 1, name: nil))
        host.send(.audio(active: true, playing: true))
        host.send(.moveToBackground)
        host.send(.taskEnded(id: 1))
        #expect(host.state == .background)
        host.send(.audio(active: false, playing: false))
        #expect(host.state == .suspended)
    }

    @Test func locationAndACallHoldLikeAudio() {
        var host = Self.activeApp()
        host.send(.backgroundLocation(true, why: "updating"))
        host.send(.callReported("C"))
        host.send(.moveToBackground)
        #expect(host.machine.holds == [.location, .voip])
        host.send(.backgroundLocation(false, why: "stopped"))
        #expect(host.state == .background, "the call still holds it")
        host.send(.callEnded("C"))
        #expect(host.state == .suspended)
    }

    @Test func aCallInterruptsAudioUntilItEnds() {
        var host = Self.activeApp()
        host.send(.audio(active: true, playing: true))
        host.send(.interrupt(.seconds(5)))
        #expect(host.audioInterruptions == [true])
        // The SDK pauses its players and deactivates the session when the interruption begins.
        host.send(.audio(active: false, playing: false))
        host.advance(by: .seconds(5))
        #expect(host.audioInterruptions == [true, false], "the interruption ends with the call")
        #expect(host.events.filter { $0 == "audio" }.count == 4, "playing, began, stopped, ended")
    }

    @Test func audioInterruptionsOnDemandNeedAnActiveSession() {
        var host = Self.activeApp()
        host.send(.audioInterruption(began: true))
        #expect(host.audioInterruptions.isEmpty, "no session, nothing to interrupt")
        host.send(.audio(active: true, playing: false))
        host.send(.audioInterruption(began: true))
        host.send(.audioInterruption(began: true))
        host.send(.audioInterruption(began: false))
        host.send(.audioInterruption(began: false))
        #expect(host.audioInterruptions == [true, false])
    }

    @Test func aVoIPPushThatReportsACallKeepsTheAppRunningForTheCall() {
        var host = SimulatedHost(policy: Policy(), continuousModes: [.voip])
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.callbacks == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background",
            "didReceiveIncomingPush background", "snapshot background",
        ])
        #expect(host.state == .background)
        #expect(host.machine.holds == [.voip])
        host.send(.callEnded("CALL-1"))
        #expect(host.state == .suspended)
    }

    @Test func aVoIPPushReachesTheForegroundAppInItsActiveState() {
        var host = Self.activeApp([.voip])
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.callbacks == ["didReceiveIncomingPush active"])
        #expect(host.state == .active)
        #expect(host.machine.activeCalls == ["CALL-1"])
    }

    @Test func aSignificantLocationChangeWakesASuspendedAppBriefly() {
        var host = BackgroundWorkMachineTests.suspendedApp()
        host.send(.deliver(BackgroundEvent(kind: .significantLocationChange, payload: "{}"), reason: "location"))
        #expect(host.callbacks == ["didEnterBackground background", "didUpdateLocations background", "snapshot background"])
        #expect(host.state == .suspended, "suspended again once the callback returns")
        #expect(host.finished == nil)
    }

    @Test func aVoIPPushWhoseCallbackReportsNoCallIsKilledWith0xbaadca11() {
        var host = Self.activeApp([.voip])
        host.send(.moveToBackground)
        host.callReportedInPush = nil
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.finished?.code == 0xbaad_ca11)
        #expect(host.finished?.namespace == .runningBoard)
        #expect(host.finished?.kind == .voipCallNotReported)
        #expect(host.finished?.reason == "pushRegistry(_:didReceiveIncomingPushWith:for:completion:) returned without reporting an incoming call to CallKit (CXProvider.reportNewIncomingCall)")
    }

    @Test func aCallReportedOutsideThePushDoesNotCountForIt() {
        var host = Self.activeApp([.voip])
        host.send(.callReported("EARLIER"))
        host.send(.callEnded("EARLIER"))
        host.send(.moveToBackground)
        host.callReportedInPush = nil
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.finished?.code == 0xbaad_ca11)
    }

    @Test func aVoIPAppResumedTooOftenIsKilledWith0xbad22222() {
        var policy = Policy()
        policy.voipResumeLimit = 3
        policy.voipResumeWindow = .seconds(10)
        var host = Self.activeApp([.voip], policy: policy)
        host.send(.moveToBackground)
        for index in 0..<3 {
            host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
            host.send(.callEnded("CALL-1"))
            #expect(host.state == .suspended, "resume \(index + 1) is allowed")
            host.advance(by: .seconds(1))
        }
        host.advance(by: .milliseconds(7500))  // 10.5 s: the first resumption (at 0 s) has left the window
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        host.send(.callEnded("CALL-1"))
        #expect(host.finished == nil)
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.finished?.code == 0xbad2_2222)
        #expect(host.finished?.kind == .voipResumedTooOften)
        #expect(host.finished?.reason == "resumed by VoIP pushes 4 times within 10.0 s; the policy allows 3")
    }

    @Test func tooManyCallsAtOnceIsAProtocolViolation() {
        var host = Self.activeApp()
        for index in 0...LifecycleMachine.maximumCalls { host.send(.callReported("C\(index)")) }
        #expect(host.finished?.kind == .protocolViolation)
    }

    // MARK: The hold limits (a test host's knobs; none on iOS)

    /// `continuousHoldLimit`: past it, audio no longer holds the app; it is suspended, and held
    /// again only after it has been in the foreground.
    @Test func theContinuousHoldLimitSuspendsAnAppHeldTooLong() {
        var policy = Policy()
        policy.continuousHoldLimit = .seconds(3)
        var host = Self.activeApp(policy: policy)
        host.send(.audio(active: true, playing: true))
        host.send(.moveToBackground)
        host.advance(by: .milliseconds(2900))
        #expect(host.state == .background)
        host.advance(by: .milliseconds(100))
        #expect(host.state == .suspended)
        #expect(host.eventLines.contains("audio audio no longer keeps the app running: it held it 3.0 s in the background (--continuous-hold-limit)"))
        #expect(host.machine.holds.isEmpty && host.machine.heldBy == [.audio])
        // The foreground starts it afresh.
        host.send(.moveToForeground)
        #expect(host.state == .active)
        host.send(.moveToBackground)
        #expect(host.state == .background, "held again")
        host.advance(by: .seconds(3))
        #expect(host.state == .suspended)
    }

    /// Without the knob, audio holds the app for as long as it plays (as on iOS).
    @Test func withoutTheLimitAHoldLastsAsLongAsItsWork() {
        var host = Self.activeApp()
        host.send(.audio(active: true, playing: true))
        host.send(.moveToBackground)
        host.advance(by: .seconds(24 * 3600))
        #expect(host.state == .background)
    }

    /// `unpushedCallLimit`: a call reported by hand (no VoIP push) is ended by the host once it
    /// has lasted that long; one a push brought is not.
    @Test func aCallNoPushBroughtEndsAfterTheUnpushedCallLimit() {
        var policy = Policy()
        policy.unpushedCallLimit = .seconds(5)
        var host = Self.activeApp([.voip], policy: policy)
        host.send(.callReported("BYHAND"))
        host.send(.moveToBackground)
        host.advance(by: .milliseconds(4900))
        #expect(host.state == .background)
        host.advance(by: .milliseconds(100))
        #expect(host.state == .suspended)
        #expect(host.machine.activeCalls.isEmpty)
        #expect(host.eventLines.contains("call call BYHAND ended by the host: no VoIP push brought it, and it lasted 5.0 s (--unpushed-call-limit)"))
        // A push's call is the push's.
        host.send(.deliver(BackgroundEvent(kind: .voipPush, payload: "{}"), reason: "voipPush"))
        #expect(host.state == .background)
        host.advance(by: .seconds(60))
        #expect(host.state == .background, "a call a push brought lasts as long as it lasts")
    }
}
