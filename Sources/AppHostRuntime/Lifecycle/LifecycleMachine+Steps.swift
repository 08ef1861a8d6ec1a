import AppHostProtocol

extension LifecycleMachine {
    // MARK: Callbacks

    /// The state the app observes while it launches.
    var launchState: WireApplicationState { launchKind == .foreground ? .inactive : .background }

    /// The requests `ready` and then `willFinishLaunching`'s acknowledgement send, as the app
    /// process's configuration carries them while the app starts: the app runs them once it has
    /// sent `ready`, and the host does not send them (docs/launching.md, "How apps are launched").
    /// `activating` (an app-delegate app: a scene app's activation names its scene): in a launch
    /// to the foreground, also the didBecomeActive that would follow didFinishLaunching, which
    /// the app runs unless the host has withdrawn it by then (`Action.withdraw`: the host came to
    /// want another step meanwhile — the app sent away, interrupted, terminated, warned).
    mutating func launchCallbacks(activating: Bool) -> [WireCallbackRequest] {
        var requests = [
            WireCallbackRequest(id: nextCallbackID, callback: .willFinishLaunching, state: launchState),
            WireCallbackRequest(id: nextCallbackID + 1, callback: .didFinishLaunching, state: launchState),
        ]
        configuredActivation = nil
        configuredActivationWithdrawn = false
        if activating, activationFollowsLaunch {
            configuredActivation = nextCallbackID + 2
            requests.append(WireCallbackRequest(id: nextCallbackID + 2, callback: .didBecomeActive, state: .active))
        }
        return requests
    }

    /// Whether didBecomeActive would follow didFinishLaunching as things stand (`reconcile`).
    var activationFollowsLaunch: Bool {
        launchKind == .foreground && placement == .foreground && !pendingMemoryWarning && pendingSceneOperations.isEmpty
    }

    /// After any input that `handle` does not return early from: the configured didBecomeActive
    /// is withdrawn, once, when the host came to want another step after didFinishLaunching (not
    /// from an app that is being ended: nothing more runs in it).
    mutating func withdrawActivationIfUnwanted() -> [Action] {
        guard let activation = configuredActivation, !configuredActivationWithdrawn, isLive, !activationFollowsLaunch else { return [] }
        configuredActivationWithdrawn = true
        return [.withdraw(activation)]
    }

    /// The running callback returned: its watchdog ends, and after didFinishLaunching the app
    /// can no longer run a configured activation it has not begun.
    mutating func endFlight(_ flight: InFlight, now: HostInstant) {
        inFlight = nil
        deadlines[.callback] = nil
        mainThreadAnswered = (now, .returned(flight.callback))
        if flight.callback == .didFinishLaunching { configuredActivation = nil }
    }

    /// didFinishLaunching (callback `id`) returned true and the app runs the configured
    /// didBecomeActive now; nil if no such callback runs or the configuration carried none.
    mutating func acknowledgedRunningActivation(_ id: UInt64, now: HostInstant) -> [Action]? {
        guard let flight = inFlight, flight.id == id, flight.callback == .didFinishLaunching,
              let activation = configuredActivation, activation == nextCallbackID else { return nil }
        endFlight(flight, now: now)
        var actions = acknowledged(flight, returned: true, snapshot: nil, now: now)
        // The app runs it now, whatever the host has wanted since: a change that came too late
        // to withdraw it is the next step's, as if it had come during didBecomeActive.
        if phase == .launched { actions += send(.didBecomeActive, state: .active, configured: true, now: now) }
        return actions
    }

    /// The state the app observes now, for callbacks that do not change it.
    var observedState: WireApplicationState {
        switch phase {
        case .active: .active
        case .background, .suspending, .suspended, .resumedInBackground: .background
        case .launching, .starting: launchState
        case .launched: launchState
        default: .inactive
        }
    }

    mutating func send(
        _ callback: WireCallback, state: WireApplicationState, after: WireApplicationState? = nil,
        remaining: Duration? = nil, event backgroundEvent: WireBackgroundEvent? = nil, detail: String? = nil,
        scene: String? = nil, configured: Bool = false, now: HostInstant
    ) -> [Action] {
        let isLaunch: Bool
        let budget: Duration
        switch callback {
        case .willFinishLaunching, .didFinishLaunching:
            isLaunch = true
        case .didBecomeActive:
            isLaunch = launchDeadline != nil
        default:
            isLaunch = false
        }
        switch callback {
        case .didEnterBackground: budget = policy.didEnterBackgroundTimeout
        case .willTerminate: budget = policy.willTerminateTimeout
        default: budget = policy.callbackTimeout
        }
        let id = nextCallbackID
        nextCallbackID += 1
        inFlight = InFlight(
            id: id, callback: callback, state: state, budget: isLaunch ? policy.launchTimeout : budget, isLaunch: isLaunch,
            detail: detail)
        if isLaunch, let launchDeadline {
            deadlines[.callback] = launchDeadline
        } else {
            deadlines[.callback] = now + budget
        }
        var request = WireCallbackRequest(
            id: id, callback: callback, state: state, stateAfter: after, backgroundTimeRemaining: remaining?.seconds,
            event: backgroundEvent)
        request.scene = scene
        return [configured ? .began(request) : .send(request)]
    }

    /// Sends a background event's callback; its work starts now, with its budget.
    mutating func deliver(_ backgroundEvent: BackgroundEvent, state: WireApplicationState, now: HostInstant) -> [Action] {
        if backgroundEvent.isCallbackOnly {
            // No work to complete: the callback is all of it (a VoIP push's must report a call
            // before it returns).
            pushReportedCall = false
            let wire = WireBackgroundEvent(work: 0, kind: backgroundEvent.kind, payload: backgroundEvent.payload)
            return send(backgroundEvent.callback, state: state, event: wire, now: now)
        }
        let id = nextWorkID
        nextWorkID += 1
        work[id] = Work(event: backgroundEvent)
        deadlines[.work(id)] = now + budget(of: backgroundEvent.kind)
        var wire = WireBackgroundEvent(
            work: id, kind: backgroundEvent.kind, taskIdentifier: backgroundEvent.taskIdentifier, payload: backgroundEvent.payload)
        wire.urlSession = backgroundEvent.urlSession
        return send(
            backgroundEvent.callback, state: state, event: wire, detail: backgroundEvent.taskIdentifier ?? backgroundEvent.urlSession, now: now)
    }

    /// The time a piece of background work has to complete.
    func budget(of kind: WireBackgroundEvent.Kind) -> Duration {
        switch kind {
        case .fetch, .remoteNotification: policy.backgroundFetchTime
        case .appRefresh: policy.appRefreshTaskTime
        case .processing: policy.processingTaskTime
        case .voipPush, .significantLocationChange: policy.callbackTimeout
        case .backgroundURLSession: policy.backgroundURLSessionTime
        }
    }

    /// Ends a running task early: its expiration handler runs, and the grace period starts.
    mutating func expire(work id: UInt64, because reason: String, now: HostInstant) -> [Action] {
        guard var item = work[id], item.event.isTask, item.expiredBecause == nil else { return [] }
        item.expiredBecause = reason
        work[id] = item
        deadlines[.work(id)] = now + policy.expirationGrace
        return [event(.taskExpired, detail: "\(item.event.taskIdentifier ?? "?"): \(reason)"), .expireWork(id)]
    }

    mutating func acknowledged(_ flight: InFlight, returned: Bool?, snapshot: String?, now: HostInstant) -> [Action] {
        switch flight.callback {
        case .willFinishLaunching, .didFinishLaunching:
            if returned == false {
                return kill(Termination(
                    kind: .launchFailed, namespace: .host, code: nil,
                    reason: "\(flight.callback.delegateMethodName) returned false"))
            }
            if flight.callback == .willFinishLaunching {
                // The second of `launchCallbacks`.
                return [event(.willFinishLaunching)] + send(.didFinishLaunching, state: launchState, configured: true, now: now)
            }
            phase = .launched
            if launchKind == .background || placement != .foreground { launchDeadline = nil }
        case .didBecomeActive:
            phase = .active
            launchDeadline = nil
        case .willResignActive, .willEnterForeground:
            phase = .inactive
        case .didEnterBackground:
            phase = .background
            needsSnapshot = true
        case .willTerminate:
            guard case .terminated(let request) = placement else { return [event(.willTerminate)] }
            return [event(.willTerminate)] + kill(request)
        case .didReceiveMemoryWarning:
            break
        case .snapshot:
            return [event(.snapshot, detail: snapshot ?? "")]
        case .performFetch, .didReceiveRemoteNotification, .launchTask, .didUpdateLocations, .handleEventsForBackgroundURLSession:
            break
        case .connectScene, .disconnectScene, .discardScene:
            needsSnapshot = phase != .active && phase != .inactive
            return [event(EventName(flight.callback), detail: flight.detail)]
        case .didReceiveIncomingPush:
            guard pushReportedCall else {
                return kill(Termination(
                    kind: .voipCallNotReported, namespace: .runningBoard, code: TerminationCode.voipCallNotReported.rawValue,
                    reason: "\(flight.callback.delegateMethodName) returned without reporting an incoming call to CallKit (CXProvider.reportNewIncomingCall)"))
            }
        }
        return [event(EventName(flight.callback), detail: flight.detail)]
    }

    // MARK: Moving towards the placement

    /// When no callback is running, starts the next step towards where the host wants the app.
    mutating func reconcile(now: HostInstant) -> [Action] {
        // In the foreground nothing is held; a later background hold starts its limit afresh.
        if placement == .foreground, holdSpent || deadlines[.continuousHold] != nil {
            holdSpent = false
            deadlines[.continuousHold] = nil
        }
        guard inFlight == nil else { return [] }
        switch phase {
        case .notRunning, .starting, .launching, .suspending, .terminating, .terminated: return []
        default: break
        }
        if case .terminated(let request) = placement {
            guard phase != .suspended else { return kill(endWithoutCallback(request, while: "suspended")) }
            if request.kind == .userTerminated && phase == .active {
                // The user swipes the app away in the app switcher, which first makes it resign
                // active: applicationWillTerminate then runs in .inactive, as on a device.
                return [event(.switcher)] + send(.willResignActive, state: .active, after: .inactive, now: now)
            }
            return send(.willTerminate, state: observedState, now: now)
        }
        if pendingMemoryWarning && phase != .suspended {
            pendingMemoryWarning = false
            return send(.didReceiveMemoryWarning, state: observedState, now: now)
        }
        if let operation = pendingSceneOperations.first, [.active, .inactive, .background].contains(phase) {
            if operation.callback != .connectScene || (phase == .active && placement == .foreground) {
                pendingSceneOperations.removeFirst()
                return send(operation.callback, state: observedState, detail: operation.session, scene: operation.session, now: now)
            }
            // A scene comes to the foreground in an active app: it waits for an interruption to
            // end; an app sent away meanwhile brings that session forward when it next comes
            // (it is the host's front session), so the operation goes.
            if !isInForeground {
                pendingSceneOperations.removeFirst()
                return reconcile(now: now)
            }
        }
        switch (phase, placement) {
        case (.launched, .foreground) where launchKind == .foreground:
            return send(.didBecomeActive, state: .active, now: now)
        case (.launched, .interrupted) where launchKind == .foreground:
            phase = .inactive
            return [event(.interrupted)]
        case (.launched, .foreground), (.launched, .interrupted), (.background, .foreground), (.background, .interrupted),
             (.resumedInBackground, .foreground), (.resumedInBackground, .interrupted):
            endBackgroundTime()
            return send(.willEnterForeground, state: .background, after: .inactive, now: now)
        case (.launched, .background), (.inactive, .background), (.resumedInBackground, .background):
            backgroundEnteredAt = now
            backgroundTimeEndedEarly = nil
            expirationSent = false
            deadlines[.backgroundWarning] = now + (policy.backgroundTime - policy.expirationWarning)
            deadlines[.backgroundEnd] = now + policy.backgroundTime + policy.expirationGrace
            return send(.didEnterBackground, state: .background, remaining: policy.backgroundTime, now: now)
        case (.inactive, .foreground):
            return send(.didBecomeActive, state: .active, now: now)
        case (.active, .foreground):
            // A remote notification or a VoIP push reaches the foreground app; other events wait
            // for the background.
            guard let index = pendingEvents.firstIndex(where: { $0.kind == .remoteNotification || $0.kind == .voipPush }) else { return [] }
            return deliver(pendingEvents.remove(at: index), state: .active, now: now)
        case (.active, .interrupted), (.active, .background):
            return send(.willResignActive, state: .active, after: .inactive, now: now)
        case (.background, .background):
            if !pendingEvents.isEmpty {
                return deliver(pendingEvents.removeFirst(), state: .background, now: now)
            }
            // With background work under way, the snapshot waits for it: it shows its result.
            if needsSnapshot && work.isEmpty {
                needsSnapshot = false
                return send(.snapshot, state: .background, now: now)
            }
            // Background tasks, background work and continuous modes (audio, location, a call)
            // each hold the app running; the last to let go suspends it.
            armHoldLimit(now: now)
            guard openTasks.isEmpty, work.isEmpty, holds.isEmpty else { return [] }
            endBackgroundTime()
            // An expiration handler that ended the last task is frozen where it is, as on iOS:
            // it is not timed while suspended, and starts afresh with the next expiry.
            expirationsRunning = [:]
            deadlines[.expirationHandlers] = nil
            phase = .suspending
            deadlines[.suspendVerification] = now + policy.suspendTimeout
            return [.freeze]
        case (.suspended, .foreground), (.suspended, .interrupted):
            phase = .background
            return [.thaw, event(.resumed)] + reconcile(now: now)
        default:
            return []
        }
    }

    // MARK: Settling

    /// What the app is in the middle of — "launching, in application(_:didFinishLaunchingWithOptions:)",
    /// "being suspended" — or nil once it has settled: no callback running, and the app where the
    /// host wants it or held there by its own work (background tasks, background events). Every
    /// transition ends within its budget (a watchdog, the suspend verification, a kill), so an
    /// app always settles unless its process outlives its kill.
    package var transition: String? {
        let callback = inFlight.map { ", in \($0.callback.delegateMethodName)" } ?? ""
        switch phase {
        case .starting: return "loading its plugin"
        case .launching, .launched: return "launching" + callback
        case .resumedInBackground: return "resuming in the background" + callback
        case .suspending: return "being suspended"
        case .terminating: return "being terminated"
        case .notRunning, .terminated, .inactive, .active, .background, .suspended:
            return inFlight.map { "in \($0.callback.delegateMethodName)" }
        }
    }

    /// Whether the app's launch is over: its process started, its launch callbacks returned
    /// (BGTaskScheduler registrations are closed; events reach it directly).
    package var launchFinished: Bool {
        switch phase {
        case .notRunning, .starting, .launching: false
        default: true
        }
    }

    /// Whether no transition is under way (`transition` is nil).
    package var isSettled: Bool {
        // `transition == nil`, without making its text: the host asks after every input.
        switch phase {
        case .starting, .launching, .launched, .resumedInBackground, .suspending, .terminating: false
        case .notRunning, .terminated, .inactive, .active, .background, .suspended: inFlight == nil
        }
    }

    // MARK: Audio interruptions

    mutating func interruptAudio(began: Bool, by cause: String) -> [Action] {
        audio.interrupted = began
        return [event(.audio, detail: "interruption \(began ? "began" : "ended") (\(cause))"), .audioInterruption(began: began)]
    }

    /// The call `interrupt APP` simulated is over: the audio interruption it began ends.
    mutating func endCallInterruptionOfAudio() -> [Action] {
        guard audio.interruptedByCall, audio.interrupted else { return [] }
        audio.interruptedByCall = false
        return interruptAudio(began: false, by: "the call ended")
    }

    mutating func endBackgroundTime() {
        backgroundEnteredAt = nil
        backgroundTimeEndedEarly = nil
        deadlines[.backgroundWarning] = nil
        deadlines[.backgroundEnd] = nil
    }

    /// The suspended app resumes in the background (for `detail`): thawed, and counted as a
    /// background wake-up.
    mutating func resumeInBackground(_ detail: String) -> [Action] {
        phase = .resumedInBackground
        backgroundWakeups += 1
        return [.thaw, event(.resumed, detail: detail)]
    }
}
