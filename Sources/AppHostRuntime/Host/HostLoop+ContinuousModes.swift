import Foundation
import AppHostProtocol

// Continuous background modes (docs/continuous-modes.md, "Continuous background modes"): the commands that
// drive audio interruptions and VoIP pushes on demand. Whether a mode holds an app running is
// the machine's decision (`LifecycleMachine.holds`); whether iOS would allow the command is
// ContinuousModeCommands'; this hands it over.

extension HostLoop {
    /// Interrupts APP's audio session (`audio-interrupt APP`), or ends the interruption
    /// (`audio-resume APP`): AVAudioSession.interruptionNotification with type began or ended.
    func audioInterruption(_ name: String, began: Bool) throws {
        try queue.sync {
            let record = try app(named: name)
            let input = try ContinuousModeCommands.audioInterruption(began: began, of: continuousModeFacts(record))
            if let run = record.run { handle(record, run, input) }
        }
    }

    /// Delivers a PushKit VoIP push (`voip-push APP FILE.json`): it launches APP into the
    /// background or resumes it there, or reaches it in the foreground. The app must report an
    /// incoming call before its callback returns (0xbaadca11).
    @discardableResult
    func voipPush(_ name: String, payload: Data, source: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            let event = try ContinuousModeCommands.voipPush(payload: payload, source: source, to: continuousModeFacts(record))
            try refuseUnreachable(record, pushOnly: true)
            return announce(record, command: .voipPush, "VoIP push from \(source)", deliver(event, to: record))
        }
    }

    /// What the continuous-mode commands need to know of the app now.
    private func continuousModeFacts(_ record: AppRecord) -> ContinuousModeCommands.App {
        var facts = ContinuousModeCommands.App(
            name: record.bundle.name, modes: Set(ContinuousMode.allCases.filter { record.bundle.backgroundModes.contains($0.backgroundMode) }))
        if let machine = record.run?.machine {
            facts.isLive = machine.isLive
            facts.isSuspended = machine.isSuspendedOrSuspending
            facts.audio = machine.audio
        }
        return facts
    }
}
