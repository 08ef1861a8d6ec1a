import AppHostProtocol

extension LifecycleMachine {
    // MARK: Time

    /// What follows every input: the next steps (`reconcile`), then any deadline already due,
    /// including one set in this turn (a launch's callback sent after the launch's own deadline,
    /// say), fired now rather than left for a timer armed in the past. Bounded: a deadline that
    /// fires sets none in the past.
    mutating func settle(now: HostInstant) -> [Action] {
        var actions = reconcile(now: now) + withdrawActivationIfUnwanted()
        for _ in 0..<8 where deadlines.values.contains(where: { $0 <= now }) {
            actions += fireDeadlines(now: now) + reconcile(now: now) + withdrawActivationIfUnwanted()
        }
        return actions
    }

    mutating func fireDeadlines(now: HostInstant) -> [Action] {
        var actions: [Action] = []
        // Earliest first, and again while any is due: a deadline set while another fires (a
        // launch callback sent with the launch's own deadline, say) may be due already, and is
        // not left behind for a timer that would fire at once.
        while let (timer, _) = deadlines.filter({ $0.value <= now }).min(by: { $0.value < $1.value }) {
            deadlines[timer] = nil
            switch timer {
            case .mainThreadSample:
                guard case .terminating(let termination) = phase else { break }
                actions += killNow(termination)
            case .killEscalation:
                guard isEnding else { break }
                deadlines[.killEscalation] = now + Self.killRetry
                actions.append(.escalateKill)
            case .suspendVerification:
                guard phase == .suspending else { break }
                actions += kill(Termination(
                    kind: .suspensionFailed, namespace: .host, code: nil,
                    reason: "could not be suspended: not every thread had stopped \(policy.suspendTimeout.formatted) after the host began to suspend it"))
            case .controlClosed:
                actions += protocolViolation("it closed its control socket", now: now)
            case .launch:
                actions += kill(.watchdog(
                    "did not finish launching within \(policy.launchTimeout.formatted): the plugin had not loaded"))
            case .callback:
                guard let flight = inFlight else { break }
                let reason = flight.isLaunch
                    ? "did not finish launching within \(policy.launchTimeout.formatted): \(flight.callback.delegateMethodName) had not returned"
                    : "did not return from \(flight.callback.delegateMethodName) within \(flight.budget.formatted)"
                actions += kill(.watchdog(reason))
            case .backgroundWarning:
                guard !openTasks.isEmpty, !expirationSent else { break }
                expirationSent = true
                expirationBegan = false
                let ids = openTasks.keys.sorted()
                actions.append(event(.expiration, detail: ids.map(taskLabel).joined(separator: ", ")))
                actions.append(.expire(taskIDs: ids, remaining: policy.expirationWarning.seconds))
            case .backgroundEnd:
                guard !openTasks.isEmpty else { break }
                let tasks = openTasks.keys.sorted().map(taskLabel).joined(separator: ", ")
                actions += kill(Termination(
                    kind: .backgroundTime, namespace: .runningBoard, code: TerminationCode.backgroundTimeExhausted.rawValue,
                    reason: "background task \(tasks) still open \(policy.expirationGrace.formatted) after "
                        + (backgroundTimeEndedEarly == nil
                            ? "its background time (\(policy.backgroundTime.formatted)) ran out"
                            : "its background time was ended on demand (expire); its expiration handler must end it (endBackgroundTask)")
                        + (expirationSent && !expirationBegan ? "; \(blockedMainThread(now: now))" : "")))
            case .expirationHandlers:
                guard let (ids, _) = expirationsRunning.min(by: { $0.value < $1.value }) else { break }
                let tasks = ids.map(taskLabel).joined(separator: ", ")
                actions += kill(.watchdog(
                    "the expiration handler of background task \(tasks) did not return within \(policy.expirationHandlerTimeout.formatted); "
                        + "expiration handlers must finish in about a second"))
            case .continuousHold:
                actions += holdLimitReached()
            case .unpushedCall(let uuid):
                actions += endUnpushedCall(uuid)
            case .interruption:
                if placement == .interrupted { placement = .foreground }
                actions += endCallInterruptionOfAudio()
            case .work(let id):
                guard let item = work[id] else { break }
                let budget = budget(of: item.event.kind)
                switch (item.event.isTask, item.expiredBecause) {
                case (true, nil):
                    actions += expire(work: id, because: "its \(budget.formatted) ran out", now: now)
                case (true, let reason?):
                    actions += kill(Termination(
                        kind: .backgroundTask, namespace: .runningBoard, code: TerminationCode.backgroundWorkOverrun.rawValue,
                        reason: "\(item.event.label) did not call setTaskCompleted(success:) within \(policy.expirationGrace.formatted) of its expiration (\(reason))"))
                case (false, _) where item.event.kind == .backgroundURLSession:
                    actions += kill(Termination(
                        kind: .backgroundURLSession, namespace: .runningBoard, code: TerminationCode.backgroundURLSessionOverrun.rawValue,
                        reason: "did not call the completion handler of \(item.event.callback.delegateMethodName) for \(item.event.label) within \(budget.formatted)"))
                case (false, _):
                    actions += kill(Termination(
                        kind: item.event.kind == .fetch ? .backgroundFetch : .remoteNotification, namespace: .runningBoard,
                        code: TerminationCode.backgroundWorkOverrun.rawValue,
                        reason: "did not call the completion handler of \(item.event.callback.delegateMethodName) within \(budget.formatted)"))
                }
            }
        }
        return actions
    }

    /// How the main thread last answered: `mainThreadAnswered`.
    enum MainThreadSign {
        case returned(WireCallback)
        case expirationHandlers(returned: Bool)

        var description: String {
            switch self {
            case .returned(.snapshot): "the snapshot was taken"
            case .returned(let callback): "\(callback.delegateMethodName) returned"
            case .expirationHandlers(let returned): returned ? "expiration handlers returned" : "expiration handlers began"
            }
        }
    }

    /// Why expiration handlers never began: "its expiration handler could not run: the main
    /// thread was blocked, not answering for 31.0 s (since applicationDidEnterBackground(_:) returned)".
    func blockedMainThread(now: HostInstant) -> String {
        guard let (at, how) = mainThreadAnswered else {
            return "its expiration handler could not run: the main thread never answered"
        }
        return "its expiration handler could not run: the main thread was blocked, "
            + "not answering for \(at.duration(to: now).formatted) (since \(how.description))"
    }

    // MARK: Ending

    mutating func kill(_ termination: Termination) -> [Action] {
        guard isLive else { return [] }
        let wasSuspended = phase == .suspended || phase == .suspending
        finalState = observedStateForReport
        phase = .terminating(termination)
        inFlight = nil
        deadlines.removeAll()
        // A watchdog report carries the main thread's backtrace at the kill, as iOS's do: asked
        // for first, for a bounded moment. A frozen app could not answer.
        if termination.kind == .watchdog, !wasSuspended {
            deadlines[.mainThreadSample] = now + Self.mainThreadSampleTimeout
            return [.sampleMainThread(termination)]
        }
        return killNow(termination)
    }

    /// The kill itself, with its escalation armed. The termination was decided before.
    mutating func killNow(_ termination: Termination) -> [Action] {
        deadlines.removeAll()
        deadlines[.killEscalation] = now + (termination.kind == .forbiddenSyscall ? Self.signalEscalation : Self.killRetry)
        return [.kill(termination)]
    }

    /// The main thread's backtrace came: the kill waits no longer.
    mutating func mainThreadSampled() -> [Action] {
        guard case .terminating(let termination) = phase, deadlines[.mainThreadSample] != nil else { return [] }
        return killNow(termination)
    }

    /// How a requested termination ends an app that cannot run `applicationWillTerminate`.
    func endWithoutCallback(_ request: Termination, while situation: String) -> Termination {
        let forceQuit = request.kind == .userTerminated
        return Termination(
            kind: forceQuit ? .forceQuit : request.kind, namespace: request.namespace, code: nil,
            reason: forceQuit
                ? "force quit by the user while \(situation) (no callback)"
                : "the host shut down; the \(situation == "suspended" ? "suspended app" : "app, \(situation),") was ended without a callback")
    }

    mutating func protocolViolation(_ what: String, now: HostInstant) -> [Action] {
        kill(Termination(kind: .protocolViolation, namespace: .host, code: nil, reason: "broke the control protocol: \(what)"))
    }

    /// The app's process ended without the host deciding it: a crash or an exit.
    func unexpectedEnd(_ exit: ProcessExit) -> Termination {
        let during = inFlight.map { " in \($0.callback.delegateMethodName)" } ?? " while \(state.rawValue)"
        if phase == .starting {
            return Termination(
                kind: .launchFailed, namespace: .host, code: nil,
                reason: "the app process \(exit.description) before its plugin loaded")
        }
        switch exit.status {
        case .signaled(let signal, _):
            return Termination(kind: .crash, namespace: .signal, code: UInt64(signal), reason: "crashed (\(signalName(signal)))\(during)")
        case .exited(let status):
            return Termination(kind: .exit, namespace: .exit, code: UInt64(UInt32(bitPattern: status)), reason: "exited with status \(status)\(during)")
        }
    }

    /// The state for a report: the one the running callback observes, else the current one.
    var observedStateForReport: AppState {
        guard let flight = inFlight, phase != .starting else { return state }
        switch flight.state {
        case .active: return .active
        case .inactive: return .inactive
        case .background: return .background
        }
    }

    func event(_ name: EventName, detail: String? = nil) -> Action {
        .event(LifecycleEvent(name: name, state: state, detail: detail))
    }

    func taskLabel(_ id: UInt64) -> String {
        let name = openTasks[id] ?? ""
        return name.isEmpty ? "#\(id)" : "#\(id) \"\(name)\""
    }
}
