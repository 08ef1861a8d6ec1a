import AppHostProtocol
import Foundation

/// What iOS would allow of the commands that drive the continuous background modes on demand
/// (docs/continuous-modes.md, "Continuous background modes"): an audio interruption needs an app that runs,
/// is not suspended and has an active audio session (and one interruption at a time); a VoIP
/// push reaches only an app that declares the voip mode, with a JSON object. A pure rule over a
/// snapshot of the app: it returns what the host hands over, or the refusal. Whether a mode
/// holds the app running, and the unpushed-call limit, are the machine's
/// (`LifecycleMachine+ContinuousModes.swift`).
enum ContinuousModeCommands {
    /// What the rules need to know of the app, as the host sees it now.
    struct App: Equatable {
        var name: String
        var modes: Set<ContinuousMode>
        /// Its process runs and is not ending.
        var isLive = false
        /// It is suspended or being suspended.
        var isSuspended = false
        var audio = LifecycleMachine.AudioActivity()
    }

    /// `audio-interrupt APP` (began) or `audio-resume APP`: the machine's input, or why not.
    static func audioInterruption(began: Bool, of app: App) throws(SupervisorError) -> LifecycleMachine.Input {
        let name = app.name
        guard app.isLive else { throw SupervisorError("\(name) is not running: it has no audio session", code: .wrongState) }
        guard !app.isSuspended else {
            throw SupervisorError(
                began
                    ? "\(name) is suspended: a suspended app has no audio to interrupt"
                    : "\(name) is suspended: its audio stopped when it was, so there is no interruption to end",
                code: .wrongState)
        }
        if began, !app.audio.active {
            throw SupervisorError("\(name) has no active audio session (AVAudioSession.setActive(true)): there is nothing to interrupt", code: .wrongState)
        }
        if began, app.audio.interrupted {
            throw SupervisorError("\(name)'s audio is interrupted already (audio-resume ends it)", code: .wrongState)
        }
        if !began, !app.audio.interrupted {
            throw SupervisorError("\(name)'s audio is not interrupted (audio-interrupt first)", code: .wrongState)
        }
        return .audioInterruption(began: began)
    }

    /// `voip-push APP FILE.json`: the event that brings the push (its payload compacted, keys
    /// sorted), or why iOS would not deliver it. `source` names the payload in a refusal.
    static func voipPush(payload: Data, source: String, to app: App) throws(SupervisorError) -> BackgroundEvent {
        guard app.modes.contains(.voip) else {
            throw SupervisorError(
                "\(app.name) has no voip in Info.plist UIBackgroundModes: iOS delivers VoIP pushes only to apps that declare it", code: .refused)
        }
        guard let object = try? JSONSerialization.jsonObject(with: payload), let dictionary = object as? [String: Any],
              let compact = try? JSONSerialization.data(withJSONObject: dictionary, options: [.sortedKeys])
        else {
            throw SupervisorError("\(source) is not a JSON object (a VoIP push payload such as {\"caller\": \"Alice\"})", code: .refused)
        }
        return BackgroundEvent(kind: .voipPush, payload: String(decoding: compact, as: UTF8.self))
    }
}
