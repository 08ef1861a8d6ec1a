import AppHostProtocol

// What the continuous background modes (audio, location, VoIP) keep track of in the machine:
// what the app does, which of it holds the app running, and the inputs that change it.
extension LifecycleMachine {
    /// The app's audio as the SDK reports it.
    package struct AudioActivity: Sendable, Equatable {
        /// Its AVAudioSession is active.
        package var active = false
        /// It plays: category playback, the session active, a player playing.
        package var playing = false
        /// An interruption began and has not ended; `byCall` when `interrupt APP` began it.
        package var interrupted = false
        package var interruptedByCall = false
    }

    /// The continuous modes holding the app running now: what it does, where it declares the mode.
    package var holds: Set<ContinuousMode> {
        var doing: Set<ContinuousMode> = []
        if audio.playing { doing.insert(.audio) }
        if updatesLocationInBackground { doing.insert(.location) }
        if !activeCalls.isEmpty { doing.insert(.voip) }
        return doing.intersection(declaredContinuousModes)
    }

    /// More calls than this at once is not a phone: a protocol violation.
    static let maximumCalls = 16

    /// An input of a continuous mode: its actions, and whether the machine then goes on to
    /// reconcile (false: the input was ignored, or it ended the app).
    mutating func handleContinuousMode(_ input: Input) -> (actions: [Action], goesOn: Bool) {
        var actions: [Action] = []
        switch input {
        case .audioInterruption(let began):
            guard isLive, phase != .suspended, phase != .suspending else { return ([], false) }
            if began {
                guard audio.active, !audio.interrupted else { return ([], false) }
                actions += interruptAudio(began: true, by: "audio-interrupt")
            } else {
                guard audio.interrupted else { return ([], false) }
                audio.interruptedByCall = false
                actions += interruptAudio(began: false, by: "audio-resume")
            }

        case .audio(let active, let playing):
            guard isLive else { return ([], false) }
            let wasPlaying = audio.playing
            audio.active = active
            audio.playing = playing
            if playing != wasPlaying {
                let unheld = playing && !declaredContinuousModes.contains(.audio)
                    ? " (no audio in UIBackgroundModes: it does not keep the app running in the background)" : ""
                actions.append(event(.audio, detail: (playing ? "playing" : "stopped") + unheld))
            }

        case .backgroundLocation(let updating, let why):
            guard isLive, updating != updatesLocationInBackground else { return ([], false) }
            updatesLocationInBackground = updating
            actions.append(event(.location, detail: why))

        case .callReported(let uuid):
            guard isLive else { return ([], false) }
            if inFlight?.callback == .didReceiveIncomingPush { pushReportedCall = true }
            guard activeCalls.insert(uuid).inserted else { return ([], false) }
            if activeCalls.count > Self.maximumCalls {
                return (protocolViolation("it reported more than \(Self.maximumCalls) calls at once", now: now), false)
            }
            let unheld = declaredContinuousModes.contains(.voip)
                ? "" : " (no voip in UIBackgroundModes: it does not keep the app running in the background)"
            actions.append(event(.call, detail: "incoming call \(uuid) reported\(unheld)"))

        case .callEnded(let uuid):
            guard isLive, activeCalls.remove(uuid) != nil else { return ([], false) }
            actions.append(event(.call, detail: "call \(uuid) ended"))

        default:
            return ([], false)
        }
        return (actions, true)
    }
}
