public import Foundation
import AppHostProtocol

// Continuous background modes (README.md, "Continuous background modes"): the commands that
// drive audio interruptions and VoIP pushes on demand. Whether a mode holds an app running is
// the machine's decision (`LifecycleMachine.holds`); this checks each command against what iOS
// would allow and hands it over.

extension Supervisor {
    /// Interrupts APP's audio session (`audio-interrupt APP`), or ends the interruption
    /// (`audio-resume APP`): AVAudioSession.interruptionNotification with type began or ended.
    public func audioInterruption(_ name: String, began: Bool) throws {
        try queue.sync {
            let record = try app(named: name)
            let bundleName = record.bundle.name
            guard let run = record.run, run.machine.isLive else {
                throw SupervisorError("\(bundleName) is not running: it has no audio session", code: .wrongState)
            }
            guard run.machine.phase != .suspended, run.machine.phase != .suspending else {
                throw SupervisorError(
                    began
                        ? "\(bundleName) is suspended: a suspended app has no audio to interrupt"
                        : "\(bundleName) is suspended: its audio stopped when it was, so there is no interruption to end",
                    code: .wrongState)
            }
            if began, !run.machine.audio.active {
                throw SupervisorError("\(bundleName) has no active audio session (AVAudioSession.setActive(true)): there is nothing to interrupt", code: .wrongState)
            }
            if began, run.machine.audio.interrupted {
                throw SupervisorError("\(bundleName)'s audio is interrupted already (audio-resume ends it)", code: .wrongState)
            }
            if !began, !run.machine.audio.interrupted {
                throw SupervisorError("\(bundleName)'s audio is not interrupted (audio-interrupt first)", code: .wrongState)
            }
            handle(record, run, .audioInterruption(began: began))
        }
    }

    /// Delivers a PushKit VoIP push (`voip-push APP FILE.json`): it launches APP into the
    /// background or resumes it there, or reaches it in the foreground. The app must report an
    /// incoming call before its callback returns (0xbaadca11).
    @discardableResult
    public func voipPush(_ name: String, payload: Data, source: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            guard record.bundle.backgroundModes.contains(.voip) else {
                throw SupervisorError(
                    "\(record.bundle.name) has no voip in Info.plist UIBackgroundModes: iOS delivers VoIP pushes only to apps that declare it", code: .refused)
            }
            guard let object = try? JSONSerialization.jsonObject(with: payload), let dictionary = object as? [String: Any] else {
                throw SupervisorError("\(source) is not a JSON object (a VoIP push payload such as {\"caller\": \"Alice\"})", code: .refused)
            }
            try refuseUnreachable(record, pushOnly: true)
            let compact = try JSONSerialization.data(withJSONObject: dictionary, options: [.sortedKeys])
            let event = BackgroundEvent(kind: .voipPush, payload: String(decoding: compact, as: UTF8.self))
            return announce(record, command: .voipPush, "VoIP push from \(source)", deliver(event, reason: "voipPush", to: record))
        }
    }
}
