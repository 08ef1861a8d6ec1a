import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// Background URL session events in the life-cycle machine, on a virtual clock (README.md,
/// "Background transfers"): launch or resume into the background with launch reason
/// backgroundURLSession, `handleEventsForBackgroundURLSession`, and 0x2182bad3 when its
/// completion handler is not called in time.
@Suite struct URLSessionMachineTests {
    static let event = BackgroundEvent(kind: .backgroundURLSession, urlSession: "com.example.episodes")

    @Test func sequence5LaunchIntoTheBackgroundForASessionsEvents() {
        var host = SimulatedHost()
        var machine = host.machine
        let actions = machine.handle(.deliver(Self.event, reason: "backgroundURLSession"), now: host.now)
        #expect(actions.contains { if case .spawn(reason: "backgroundURLSession", _) = $0 { true } else { false } }, "the launch reason is backgroundURLSession")

        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        #expect(host.callbacks == [
            "willFinishLaunching background", "didFinishLaunching background", "didEnterBackground background",
            "handleEventsForBackgroundURLSession background",
        ])
        #expect(!host.events.contains("didBecomeActive"))
        #expect(host.state == .background, "held running until the completion handler is called")
        host.advance(by: .seconds(29))
        host.send(.workCompleted(id: host.work[0], result: "success"))
        #expect(host.events.suffix(4) == ["handleEventsForBackgroundURLSession", "urlSessionEventsCompleted", "snapshot", "suspended"])
        #expect(host.state == .suspended)
        #expect(host.finished == nil)
    }

    @Test func theCallbackNamesTheSessionAndCarriesItsWorkNumber() {
        var machine = SimulatedHost.suspendedMachine()
        let now = HostInstant(nanoseconds: 2_000_000_000)
        func requests(_ actions: [LifecycleMachine.Action]) -> [WireCallbackRequest] {
            actions.compactMap { action -> WireCallbackRequest? in
                if case .send(let request) = action { return request }
                return nil
            }
        }
        let resumed = requests(machine.handle(.deliver(Self.event, reason: "backgroundURLSession"), now: now))
        #expect(resumed.map(\.callback) == [.didEnterBackground], "sequence 6: didEnterBackground comes first")
        let after = requests(machine.handle(.acknowledged(id: resumed[0].id, returned: nil, snapshot: nil), now: now))
        let request = after.first
        #expect(request?.callback == .handleEventsForBackgroundURLSession)
        #expect(request?.event?.kind == .backgroundURLSession)
        #expect(request?.event?.urlSession == "com.example.episodes")
        #expect(request?.event?.work != nil)
        #expect(request?.state == .background)
    }

    @Test func sequence6ResumeASuspendedAppForItsSessionsEvents() {
        var host = BackgroundWorkMachineTests.suspendedApp()
        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        #expect(!host.frozen)
        #expect(host.events.first == "resumed")
        #expect(host.callbacks == ["didEnterBackground background", "handleEventsForBackgroundURLSession background"])
        host.send(.workCompleted(id: host.work[0], result: "success"))
        #expect(host.state == .suspended)
    }

    @Test func aCompletionHandlerNotCalledWithinThePolicysTimeIs0x2182bad3() {
        var policy = Policy()
        policy.backgroundURLSessionTime = .seconds(5)
        var host = BackgroundWorkMachineTests.suspendedApp(policy)
        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        host.advance(by: .milliseconds(4_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.code == TerminationCode.backgroundURLSessionOverrun.rawValue)
        #expect(host.finished?.code == 0x2182_bad3)
        #expect(host.finished?.kind == .backgroundURLSession)
        #expect(host.finished?.namespace == .runningBoard)
        #expect(host.finished?.reason == "did not call the completion handler of application(_:handleEventsForBackgroundURLSession:completionHandler:) for background URLSession com.example.episodes within 5.0 s")
    }

    @Test func theDefaultTimeIs30Seconds() {
        var host = SimulatedHost()
        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        host.advance(by: .milliseconds(29_999))
        #expect(host.finished == nil)
        host.advance(by: .milliseconds(1))
        #expect(host.finished?.kind == .backgroundURLSession)
    }

    @Test func aForegroundAppGetsTheEventWhenItLeavesTheForeground() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.callbacks = []
        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        #expect(host.callbacks.isEmpty, "iOS calls handleEvents only for an app in the background")
        host.send(.moveToBackground)
        #expect(host.callbacks.suffix(2) == ["didEnterBackground background", "handleEventsForBackgroundURLSession background"])
    }

    @Test func aSecondCompletionOfTheSameWorkIsIgnored() {
        var host = BackgroundWorkMachineTests.suspendedApp()
        host.send(.deliver(Self.event, reason: "backgroundURLSession"))
        let work = host.work[0]
        host.send(.workCompleted(id: work, result: "success"))
        let events = host.events
        host.send(.workCompleted(id: work, result: "success"))
        #expect(host.events == events)
        #expect(host.finished == nil)
    }
}

extension SimulatedHost {
    /// A machine launched to the foreground, sent to the background and suspended.
    static func suspendedMachine() -> LifecycleMachine {
        BackgroundWorkMachineTests.suspendedApp().machine
    }
}
