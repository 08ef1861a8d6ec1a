import AppHostProtocol

/// The life cycle of one app, as a pure state machine (docs/lifecycle.md, "The life cycle").
///
/// It takes inputs — commands, the app's messages, the process's end, the passing of time — and
/// returns the actions the caller must perform (send a callback, freeze, kill, write a report).
/// It never reads a clock: every input carries `now`, and `nextDeadline` says when the caller
/// must next deliver `.tick`. So every rule is testable with a virtual clock, in microseconds.
package struct LifecycleMachine: Sendable {
    package enum Phase: Sendable, Equatable {
        case notRunning
        /// Spawned; the plugin is not loaded yet.
        case starting
        /// `willFinishLaunching` or `didFinishLaunching` running.
        case launching
        /// `didFinishLaunching` returned; not yet active nor in the background.
        case launched
        /// Resumed from suspension into the background; `didEnterBackground` not yet sent.
        case resumedInBackground
        case inactive
        case active
        case background
        /// Freeze requested, not yet verified.
        case suspending
        case suspended
        /// Killed for this reason; waiting for the process to end.
        case terminating(Termination)
        case terminated
    }

    /// Where the host wants the app.
    enum Placement: Equatable {
        case foreground
        case interrupted
        case background
        /// Asked to end (`terminate`, host shutdown): `applicationWillTerminate` first if it runs.
        case terminated(Termination)
    }

    /// Background work under way: an event delivered whose completion has not come.
    package struct Work: Sendable, Equatable {
        package var event: BackgroundEvent
        /// Why the host ended it early, once it has.
        package var expiredBecause: String?
    }

    struct InFlight {
        var id: UInt64
        var callback: WireCallback
        /// What the app observes while it runs.
        var state: WireApplicationState
        var budget: Duration
        var isLaunch: Bool
        var detail: String?
    }

    package let policy: Policy
    package internal(set) var phase: Phase = .notRunning
    /// Open background tasks, by identifier, with their names.
    package internal(set) var openTasks: [UInt64: String] = [:]
    /// When the app last entered the background, while its background time runs.
    package internal(set) var backgroundEnteredAt: HostInstant?
    /// The state the app was in when the host decided to end it (or it ended): inside a callback,
    /// the state the app observed there.
    package internal(set) var finalState: AppState = .notRunning

    var placement: Placement = .foreground
    var launchKind: LaunchKind = .foreground
    var inFlight: InFlight?
    var nextCallbackID: UInt64 = 1
    var deadlines: [Timer: HostInstant] = [:]
    /// Spawn plus the launch budget, until the launch is over; bounds every launch callback.
    var launchDeadline: HostInstant?
    var needsSnapshot = false
    var pendingMemoryWarning = false
    /// The id of the launch's didBecomeActive while the app's configuration carries it and the
    /// app may still run it: until the acknowledgement of didFinishLaunching.
    var configuredActivation: UInt64?
    /// The host has told the app not to run it (it may have begun already).
    var configuredActivationWithdrawn = false
    /// Background events waiting for the app to be ready for them.
    package internal(set) var pendingEvents: [BackgroundEvent] = []
    /// Scene operations waiting for no callback to run.
    package internal(set) var pendingSceneOperations: [SceneOperation] = []
    /// Background work under way, by number.
    package internal(set) var work: [UInt64: Work] = [:]
    /// Launches into the background and resumptions there in this run: what iOS counts as the
    /// app's background wake-ups.
    package internal(set) var backgroundWakeups = 0
    var nextWorkID: UInt64 = 1
    var expirationSent = false
    /// Expiration handlers running on the main thread, by the tasks they expire: when they began.
    var expirationsRunning: [[UInt64]: HostInstant] = [:]
    /// Whether the handlers of the last expiry sent have begun: if not, the main thread never
    /// took the message (it was blocked).
    var expirationBegan = false
    /// The last time the app's main thread was seen to answer, and how (formatted only when a
    /// report needs it: this is set on every acknowledgement).
    var mainThreadAnswered: (at: HostInstant, how: MainThreadSign)?

    /// When `expire APP` ended the background time before its budget.
    var backgroundTimeEndedEarly: HostInstant?
    /// The time of the input being handled: every deadline armed while handling it counts from it.
    var now = HostInstant(nanoseconds: 0)

    /// The continuous modes the app declares in `UIBackgroundModes`: only these can hold it.
    package var declaredContinuousModes: Set<ContinuousMode> = []
    /// What the app does that a continuous mode keeps it running for, declared or not.
    package internal(set) var audio = AudioActivity()
    /// Whether the app receives location updates in the background (the host decides: the app
    /// updates, allows background updates, is authorized for them).
    package internal(set) var updatesLocationInBackground = false
    /// CallKit calls under way, by UUID.
    package internal(set) var activeCalls: Set<String> = []
    /// A VoIP push's callback runs and has reported a call; the continuous-hold limit ran out.
    var pushReportedCall = false, holdSpent = false
    /// When VoIP pushes resumed the app, within the policy's window.
    var voipResumes: [HostInstant] = []

    /// Whether a launch to the foreground carries its didBecomeActive (an app-delegate app; a
    /// scene app's activation names its scene).
    package var activatesOnLaunch: Bool

    package init(policy: Policy, continuousModes: Set<ContinuousMode> = [], activatesOnLaunch: Bool = true) {
        self.policy = policy
        self.declaredContinuousModes = continuousModes
        self.activatesOnLaunch = activatesOnLaunch
    }

    package mutating func handle(_ input: Input, now: HostInstant) -> [Action] {
        self.now = now
        var actions: [Action] = []
        switch input {
        case .launch(let kind, let reason):
            guard phase == .notRunning else { return [] }
            launchKind = kind
            placement = kind == .foreground ? .foreground : .background
            if kind == .background { backgroundWakeups += 1 }
            phase = .starting
            launchDeadline = now + policy.launchTimeout
            deadlines[.launch] = launchDeadline
            actions += [.spawn(reason: reason, callbacks: launchCallbacks(activating: activatesOnLaunch)), event(.launching, detail: reason)]

        case .ready:
            // The host's message table accepts `ready` once; the machine holds its own invariant
            // too, whoever feeds it (the simulated hosts of the tests included).
            guard phase == .starting else { return protocolViolation("the app said it was ready twice", now: now) }
            deadlines[.launch] = nil
            phase = .launching
            actions.append(event(.loaded))
            // The first of `launchCallbacks`.
            actions += send(.willFinishLaunching, state: launchState, configured: true, now: now)

        case .launchFailed(let reason):
            actions += kill(Termination(kind: .launchFailed, namespace: .host, code: nil, reason: reason))

        case .acknowledged(let id, let returned, let snapshot):
            guard let flight = inFlight, flight.id == id else {
                return protocolViolation("it acknowledged callback \(id), which was not running", now: now)
            }
            endFlight(flight, now: now)
            actions += acknowledged(flight, returned: returned, snapshot: snapshot, now: now)

        case .acknowledgedThenNext(let id):
            guard let more = acknowledgedRunningActivation(id, now: now) else {
                return protocolViolation("it ran a callback after callback \(id) that its configuration did not carry", now: now)
            }
            actions += more

        case .expirationHandlers(let ids, let returned):
            guard isLive else { return [] }
            mainThreadAnswered = (now, .expirationHandlers(returned: returned))
            if returned {
                expirationsRunning[ids] = nil
            } else {
                expirationBegan = true
                // Bounded: an app that sends begins and never returns has at most a few timed.
                if expirationsRunning.count < 8 { expirationsRunning[ids] = now }
            }
            deadlines[.expirationHandlers] = expirationsRunning.values.min().map { $0 + policy.expirationHandlerTimeout }

        case .taskBegan(let id, let name):
            guard isLive else { return [] }
            openTasks[id] = name ?? ""
            actions.append(event(.backgroundTaskBegan, detail: taskLabel(id)))
            if openTasks.count > policy.maximumBackgroundTasks {
                actions += kill(Termination(
                    kind: .tooManyBackgroundTasks, namespace: .runningBoard,
                    code: TerminationCode.tooManyBackgroundTasks.rawValue,
                    reason: "opened \(openTasks.count) background tasks at once; the limit is \(policy.maximumBackgroundTasks)"))
            }

        case .taskEnded(let id):
            guard isLive, openTasks[id] != nil else { return [] }
            let label = taskLabel(id)
            openTasks[id] = nil
            actions.append(event(.backgroundTaskEnded, detail: label))

        case .warning(let text):
            actions.append(event(.warning, detail: text))

        case .info(let name, let detail):
            actions.append(event(name, detail: detail))

        case .suspensionVerified:
            guard phase == .suspending else { return [] }
            deadlines[.suspendVerification] = nil
            phase = .suspended
            actions.append(event(.suspended))
            if let next = pendingEvents.first {
                // An event arrived while the app was being suspended.
                actions += resumeInBackground("in the background for a \(next.label)")
            } else if let next = pendingSceneOperations.first {
                actions += resumeInBackground("in the background for \(next.callback.delegateMethodName)")
            }

        case .exited(let exit):
            guard isAlive else { return [] }
            let termination: Termination
            if case .terminating(let decided) = phase {
                termination = decided
            } else {
                finalState = observedStateForReport
                termination = unexpectedEnd(exit)
            }
            phase = .terminated
            inFlight = nil
            deadlines.removeAll()
            backgroundEnteredAt = nil
            return [.finished(termination, exit)]

        case .protocolViolation(let what):
            return protocolViolation(what, now: now)

        case .controlClosed:
            guard isLive else { return [] }
            deadlines[.controlClosed] = now + Self.controlCloseGrace

        case .enforce(let termination):
            return kill(termination)

        case .mainThreadSampled:
            return mainThreadSampled()

        case .tick:
            actions += fireDeadlines(now: now)

        case .moveToForeground:
            if phase == .notRunning { return handle(.launch(.foreground, reason: "user"), now: now) }
            guard !isTerminationRequested else { return [] }
            placement = .foreground
            deadlines[.interruption] = nil
            actions += endCallInterruptionOfAudio()
            // A processing task ends at once when the user opens the app; it is not held to it.
            for (id, item) in work.sorted(by: { $0.key < $1.key }) where item.event.kind == .processing {
                actions += expire(work: id, because: "the user opened the app", now: now)
                work[id] = nil
                deadlines[.work(id)] = nil
            }

        case .moveToBackground:
            guard !isTerminationRequested, isAlive else { return [] }
            placement = .background
            deadlines[.interruption] = nil
            actions += endCallInterruptionOfAudio()

        case .interrupt(let duration):
            guard isAlive, isInForeground else { return [] }
            placement = .interrupted
            deadlines[.interruption] = duration.map { now + $0 }
            // A call interrupts the app's audio too, until it ends.
            if audio.active && !audio.interrupted {
                audio.interruptedByCall = true
                actions += interruptAudio(began: true, by: "a call (interrupt)")
            }

        case .openSwitcher:
            guard isAlive, isInForeground, placement != .interrupted else { return [] }
            placement = .interrupted
            deadlines[.interruption] = nil
            actions.append(event(.switcher))

        case .endInterruption:
            guard placement == .interrupted else { return [] }
            placement = .foreground
            deadlines[.interruption] = nil
            actions += endCallInterruptionOfAudio()

        case .audioInterruption, .audio, .backgroundLocation, .callReported, .callEnded:
            let (more, goesOn) = handleContinuousMode(input)
            guard goesOn else { return more }
            actions += more

        case .terminate(let byUser):
            guard isLive, !isTerminationRequested else { return [] }
            let request = byUser
                ? Termination(
                    kind: .userTerminated, namespace: .user, code: nil,
                    reason: "terminated by the user; applicationWillTerminate(_:) returned")
                : Termination(
                    kind: .hostShutdown, namespace: .host, code: nil,
                    reason: "the host shut down; applicationWillTerminate(_:) returned")
            placement = .terminated(request)
            switch phase {
            case .starting:
                actions += kill(Termination(
                    kind: request.kind, namespace: request.namespace, code: nil,
                    reason: byUser ? "terminated by the user before it finished loading" : "the host shut down before the app finished loading"))
            case .suspending:
                // Its threads are stopping or stopped: like a suspended app, it gets no callback.
                actions += kill(endWithoutCallback(request, while: "being suspended"))
            default:
                break
            }

        case .wakeInBackground:
            if phase == .notRunning { return handle(.launch(.background, reason: "background"), now: now) }
            guard phase == .suspended, placement == .background else { return [] }
            actions += resumeInBackground("in the background")

        case .deliver(let backgroundEvent, let reason):
            if phase == .notRunning {
                pendingEvents = [backgroundEvent]
                return handle(.launch(.background, reason: reason), now: now)
            }
            guard isLive, !isTerminationRequested else { return [] }
            if backgroundEvent.kind == .voipPush, phase == .suspended || phase == .suspending {
                // iOS ends a VoIP app that pushes resume too often (0xbad22222).
                voipResumes = voipResumes.filter { $0.duration(to: now) < policy.voipResumeWindow } + [now]
                if voipResumes.count > policy.voipResumeLimit {
                    return kill(Termination(
                        kind: .voipResumedTooOften, namespace: .runningBoard, code: TerminationCode.voipResumedTooOften.rawValue,
                        reason: "resumed by VoIP pushes \(voipResumes.count) times within \(policy.voipResumeWindow.formatted); the policy allows \(policy.voipResumeLimit)"))
                }
            }
            pendingEvents.append(backgroundEvent)
            if phase == .suspended {
                actions += resumeInBackground("in the background for a \(backgroundEvent.label)")
            }

        case .workCompleted(let id, let result):
            guard isLive, let done = work.removeValue(forKey: id) else { return [] }
            deadlines[.work(id)] = nil
            needsSnapshot = true
            switch done.event.kind {
            case .fetch: actions.append(event(.fetchCompleted, detail: result))
            case .remoteNotification: actions.append(event(.notificationCompleted, detail: result))
            case .appRefresh, .processing:
                actions.append(event(.taskCompleted, detail: "\(done.event.taskIdentifier ?? "?") \(result)"))
            case .backgroundURLSession:
                actions.append(event(.urlSessionEventsCompleted, detail: done.event.urlSession))
            case .voipPush, .significantLocationChange:
                break
            }

        case .expireWork(let ids, let reason):
            let targets = (ids ?? Array(work.keys)).sorted().filter { work[$0]?.event.isTask == true && work[$0]?.expiredBecause == nil }
            for id in targets { actions += expire(work: id, because: reason, now: now) }

        case .expireBackgroundTime:
            guard backgroundEnteredAt != nil, !openTasks.isEmpty, !isEnding else { return [] }
            backgroundTimeEndedEarly = now
            expirationSent = true
            deadlines[.backgroundWarning] = nil
            deadlines[.backgroundEnd] = now + policy.expirationGrace
            let ids = openTasks.keys.sorted()
            expirationBegan = false
            actions.append(event(.expiration, detail: ids.map(taskLabel).joined(separator: ", ")))
            actions.append(.expire(taskIDs: ids, remaining: 0))

        case .conditionsChanged(let externalPower, let network):
            for (id, item) in work.sorted(by: { $0.key < $1.key }) where item.event.kind == .processing && item.expiredBecause == nil {
                if item.event.requiresExternalPower && !externalPower {
                    actions += expire(work: id, because: "external power was lost", now: now)
                } else if item.event.requiresNetworkConnectivity && !network {
                    actions += expire(work: id, because: "the network went offline", now: now)
                }
            }

        case .abort:
            return kill(Termination(
                kind: .hostShutdown, namespace: .host, code: nil,
                reason: "the host was told to stop at once; killed without a callback"))

        case .memoryWarning:
            guard isAlive, phase != .suspended, phase != .suspending, phase != .starting else { return [] }
            pendingMemoryWarning = true

        case .scene(let operation):
            guard isLive, !isTerminationRequested else { return [] }
            pendingSceneOperations.append(operation)
            if phase == .suspended {
                actions += resumeInBackground("in the background for \(operation.callback.delegateMethodName)")
            }
        }
        return actions + settle(now: now)
    }
}
