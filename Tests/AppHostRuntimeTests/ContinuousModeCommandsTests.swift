import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// What iOS would allow of `audio-interrupt`, `audio-resume` and `voip-push` (ContinuousModeCommands)
/// on their own.
@Suite struct ContinuousModeCommandsTests {
    private func player(_ change: (inout ContinuousModeCommands.App) -> Void = { _ in }) -> ContinuousModeCommands.App {
        var app = ContinuousModeCommands.App(name: "Player", modes: [.audio], isLive: true)
        app.audio.active = true
        change(&app)
        return app
    }

    @Test func anInterruptionNeedsARunningAppWithAnActiveSessionAndOneAtATime() throws {
        #expect(try ContinuousModeCommands.audioInterruption(began: true, of: player()) == .audioInterruption(began: true))
        #expect(throws: SupervisorError.self, "not running") { _ = try ContinuousModeCommands.audioInterruption(began: true, of: player { $0.isLive = false }) }
        #expect(throws: SupervisorError.self, "suspended") { _ = try ContinuousModeCommands.audioInterruption(began: true, of: player { $0.isSuspended = true }) }
        #expect(throws: SupervisorError.self, "no active session") { _ = try ContinuousModeCommands.audioInterruption(began: true, of: player { $0.audio.active = false }) }
        #expect(throws: SupervisorError.self, "interrupted already") { _ = try ContinuousModeCommands.audioInterruption(began: true, of: player { $0.audio.interrupted = true }) }
        #expect(throws: SupervisorError.self, "nothing to end") { _ = try ContinuousModeCommands.audioInterruption(began: false, of: player()) }
        #expect(try ContinuousModeCommands.audioInterruption(began: false, of: player { $0.audio.interrupted = true }) == .audioInterruption(began: false))
    }

    @Test func aVoIPPushReachesOnlyAnAppWithTheModeAndIsAJSONObject() throws {
        let phone = ContinuousModeCommands.App(name: "Phone", modes: [.voip])
        let event = try ContinuousModeCommands.voipPush(payload: Data(#"{ "z": 1, "caller": "Alice" }"#.utf8), source: "call.json", to: phone)
        #expect(event == BackgroundEvent(kind: .voipPush, payload: #"{"caller":"Alice","z":1}"#), "compacted, keys sorted")
        #expect(throws: SupervisorError.self, "no voip mode") {
            _ = try ContinuousModeCommands.voipPush(payload: Data("{}".utf8), source: "call.json", to: player())
        }
        #expect(throws: SupervisorError.self, "not an object") {
            _ = try ContinuousModeCommands.voipPush(payload: Data("[1]".utf8), source: "call.json", to: phone)
        }
    }
}
