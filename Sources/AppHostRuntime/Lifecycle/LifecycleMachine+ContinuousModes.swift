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

    /// The continuous modes holding the app running now: what it does, where it declares the
    /// mode, unless the continuous-hold limit has run out since the app was in the foreground.
    package var holds: Set<ContinuousMode> { holdSpent ? [] : heldBy }

    /// What would hold the app, limit or not.
    var heldBy: Set<ContinuousMode> {
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
            if inFlight?.callback != .didReceiveIncomingPush, let limit = policy.unpushedCallLimit {
                deadlines[.unpushedCall(uuid)] = now + limit
            }

        case .callEnded(let uuid):
            guard isLive, activeCalls.remove(uuid) != nil else { return ([], false) }
            deadlines[.unpushedCall(uuid)] = nil
            actions.append(event(.call, detail: "call \(uuid) ended"))

        default:
            return ([], false)
        }
        return (actions, true)
    }

    /// In the background with a continuous mode holding the app: its limit starts, once.
    mutating func armHoldLimit(now: HostInstant) {
        guard let limit = policy.continuousHoldLimit, !holdSpent, !heldBy.isEmpty, deadlines[.continuousHold] == nil else { return }
        deadlines[.continuousHold] = now + limit
    }

    /// `continuousHoldLimit` ran out: nothing holds the app now (reconcile then suspends it).
    mutating func holdLimitReached() -> [Action] {
        let held = heldBy
        guard isLive, !holdSpent, !held.isEmpty, placement != .foreground, let limit = policy.continuousHoldLimit else { return [] }
        holdSpent = true
        let names = held.map(\.rawValue).sorted().joined(separator: ", ")
        let kind: EventName = held.contains(.audio) ? .audio : held.contains(.location) ? .location : .call
        return [event(kind, detail: "\(names) no longer keeps the app running: it held it \(limit.formatted) in the background (--continuous-hold-limit)")]
    }

    /// `unpushedCallLimit` ran out for a call no VoIP push brought: the host ends it.
    mutating func endUnpushedCall(_ uuid: String) -> [Action] {
        guard isLive, activeCalls.remove(uuid) != nil, let limit = policy.unpushedCallLimit else { return [] }
        return [event(.call, detail: "call \(uuid) ended by the host: no VoIP push brought it, and it lasted \(limit.formatted) (--unpushed-call-limit)")]
    }
}
