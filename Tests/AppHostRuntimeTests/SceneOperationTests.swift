import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// Scene operations in the machine (docs/lifecycle.md, "Scenes"), on the virtual clock: each is delivered
/// when no callback runs, a suspended app is resumed into the background for it and suspended
/// again, a scene comes to the foreground only in an active app, and each is timed as a callback.
@Suite struct SceneOperationTests {
    private func operation(_ callback: WireCallback, _ session: String) -> LifecycleMachine.Input {
        .scene(.init(callback, session: session))
    }

    @Test func aSuspendedAppIsResumedForASceneOperationAndSuspendedAgain() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.moveToBackground)
        #expect(host.state == .suspended)
        host.callbacks = []
        host.events = []
        host.send(operation(.disconnectScene, "1"))
        #expect(host.callbacks == ["didEnterBackground background", "disconnectScene background", "snapshot background"])
        #expect(host.events == ["resumed", "didEnterBackground", "disconnectScene", "snapshot", "suspended"])
        #expect(host.frozen)
    }

    @Test func aNewSceneWaitsForAnInterruptionToEnd() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.interrupt(nil))
        host.callbacks = []
        host.send(operation(.connectScene, "2"))
        #expect(host.callbacks.isEmpty, "not while the app is inactive")
        host.send(.endInterruption)
        #expect(host.callbacks == ["didBecomeActive active", "connectScene active"])
        #expect(host.state == .active)
    }

    @Test func aNewSceneForAnAppSentAwayMeanwhileIsDropped() {
        var host = SimulatedHost()
        host.send(.launch(.foreground, reason: "user"))
        host.send(.interrupt(nil))
        host.send(operation(.connectScene, "2"))
        host.send(.moveToBackground)
        #expect(!host.callbacks.contains { $0.hasPrefix("connectScene") })
        #expect(host.state == .suspended)
        #expect(host.machine.pendingSceneOperations.isEmpty)
    }

    @Test func operationsWaitForTheRunningCallbackAndComeInOrder() {
        var host = SimulatedHost()
        host.hangIn = [.didReceiveMemoryWarning]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.memoryWarning)
        host.send(operation(.disconnectScene, "1"))
        host.send(operation(.discardScene, "1"))
        #expect(host.callbacks.last == "didReceiveMemoryWarning active", "one callback at a time")
        host.hangIn = []
        host.send(.acknowledged(id: 4, returned: nil, snapshot: nil))
        #expect(Array(host.callbacks.suffix(2)) == ["disconnectScene active", "discardScene active"])
    }

    @Test func aSceneOperationIsTimedAsACallback() {
        var host = SimulatedHost()
        host.hangIn = [.discardScene]
        host.send(.launch(.foreground, reason: "user"))
        host.send(operation(.discardScene, "3"))
        host.advance(by: Policy().callbackTimeout)
        #expect(host.finished?.code == TerminationCode.watchdog.rawValue)
        #expect(host.finished?.reason.hasPrefix("did not return from application(_:didDiscardSceneSessions:) within") == true)
    }

    @Test func anAppBeingTerminatedGetsNoSceneOperation() {
        var host = SimulatedHost()
        host.hangIn = [.willTerminate]
        host.send(.launch(.foreground, reason: "user"))
        host.send(.terminate(byUser: false))
        host.send(operation(.disconnectScene, "1"))
        #expect(host.machine.pendingSceneOperations.isEmpty)
    }
}

/// The host's record of an app's scene sessions (docs/lifecycle.md, "Scenes").
@Suite struct SceneSessionsTests {
    @Test func theFrontSessionIsTheOneLastInTheForeground() {
        var scenes = SceneSessions()
        #expect(scenes.connectFront() == "1", "an app with none gets a new one")
        #expect(scenes.add() == "2")
        scenes.markConnected("2")
        #expect(scenes.front == "2")
        scenes.discard("2", running: true)
        #expect(scenes.front == "1")
        #expect(scenes.add() == "3", "identifiers are never reused")
    }

    /// A session discarded while the app does not run is given to its next launch, marked
    /// discarded with what the app last reported of it, once; a force quit discards them all.
    @Test func aSessionDiscardedWhileTheAppIsNotRunningGoesToTheNextLaunchOnce() {
        var scenes = SceneSessions()
        _ = scenes.connectFront()
        _ = scenes.add()
        #expect(scenes.restore([WireSceneSession(identifier: "1", userInfo: "{}")]) == nil)
        scenes.discard("1", running: false)
        var told = WireSceneSession(identifier: "1", userInfo: "{}")
        told.discarded = true
        #expect(scenes.forLaunch == [WireSceneSession(identifier: "2"), told])
        scenes.launched()
        #expect(scenes.forLaunch == [WireSceneSession(identifier: "2")])
        scenes.discardAll()
        #expect(scenes.sessions.isEmpty)
        #expect(scenes.forLaunch.map(\.identifier) == ["2"] && scenes.forLaunch.allSatisfy { $0.discarded == true })
        #expect(scenes.connectFront() == "3", "the next launch begins with a new session")
    }

    @Test func aReportNamesOnlySessionsTheHostMadeOrDiscarded() {
        var scenes = SceneSessions()
        _ = scenes.add()
        _ = scenes.add()
        scenes.discard("2", running: true)
        let report = [WireSceneSession(identifier: "1", userInfo: #"{"visits":1}"#), WireSceneSession(identifier: "2")]
        #expect(scenes.restore(report) == nil, "the app may report a session before it hears it was discarded")
        #expect(scenes.session("1")?.restoration?.userInfo == #"{"visits":1}"#)
        #expect(scenes.restore([WireSceneSession(identifier: "9")]) == "it reported scene session \"9\", which the host did not make")
    }

    @Test func sessionsRoundTripThroughTheStateDirectorysJSON() throws {
        var scenes = SceneSessions()
        _ = scenes.connectFront()
        _ = scenes.restore([WireSceneSession(identifier: "1", configuration: "Main", activityType: "com.example.viewing", activityUserInfo: "{}")])
        let data = try JSONEncoder().encode(["com.example.app": scenes])
        let decoded = try JSONDecoder().decode([String: SceneSessions].self, from: data)
        #expect(decoded["com.example.app"] == scenes)
    }
}
