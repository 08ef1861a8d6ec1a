package import AppHostProtocol

/// An app's state as the person running the host sees it: in events, `wait APP STATE` and `ps`.
public enum AppState: String, Sendable, CaseIterable, Codable {
    case notRunning = "not-running"
    case launching
    case inactive
    case active
    case background
    case suspended
    case terminated
}

/// How an app is launched: to the foreground (sequence 1) or directly into the background (5).
public enum LaunchKind: Sendable, Equatable {
    case foreground
    case background
}

/// A background event for an app: a fetch, a remote notification, or a BGTaskScheduler task
/// (LIFECYCLE.md, sequences 5 and 6).
package struct BackgroundEvent: Sendable, Equatable {
    package var kind: WireBackgroundEvent.Kind
    /// A task's identifier.
    package var taskIdentifier: String?
    /// A remote notification's payload (JSON).
    package var payload: String?
    /// A processing task's conditions: it ends early when one stops holding.
    package var requiresExternalPower = false
    package var requiresNetworkConnectivity = false

    package init(
        kind: WireBackgroundEvent.Kind, taskIdentifier: String? = nil, payload: String? = nil,
        requiresExternalPower: Bool = false, requiresNetworkConnectivity: Bool = false
    ) {
        self.kind = kind
        self.taskIdentifier = taskIdentifier
        self.payload = payload
        self.requiresExternalPower = requiresExternalPower
        self.requiresNetworkConnectivity = requiresNetworkConnectivity
    }

    /// "background fetch", "remote notification", "BGAppRefreshTask com.example.refresh".
    package var label: String {
        switch kind {
        case .fetch: "background fetch"
        case .remoteNotification: "remote notification"
        case .appRefresh: "BGAppRefreshTask \(taskIdentifier ?? "?")"
        case .processing: "BGProcessingTask \(taskIdentifier ?? "?")"
        }
    }

    var isTask: Bool { kind == .appRefresh || kind == .processing }

    /// The callback that delivers it.
    var callback: WireCallback {
        switch kind {
        case .fetch: .performFetch
        case .remoteNotification: .didReceiveRemoteNotification
        case .appRefresh, .processing: .launchTask
        }
    }
}

/// One line of an app's life: a callback that returned, a state it entered, a task it began.
public struct LifecycleEvent: Sendable, Equatable {
    /// Stable names, listed in README.md: `launching`, `loaded`, `willFinishLaunching`, …
    public var name: String
    /// The app's state after the event.
    public var state: AppState
    public var detail: String?

    public init(name: String, state: AppState, detail: String? = nil) {
        self.name = name
        self.state = state
        self.detail = detail
    }
}

/// The life cycle of one app, as a pure state machine (LIFECYCLE.md).
///
/// It takes inputs — commands, the app's messages, the process's end, the passing of time — and
/// returns the actions the caller must perform (send a callback, freeze, kill, write a report).
/// It never reads a clock: every input carries `now`, and `nextDeadline` says when the caller
/// must next deliver `.tick`. So every rule is testable with a virtual clock, in microseconds.
package struct LifecycleMachine: Sendable {
    package enum Input: Sendable, Equatable {
        case launch(LaunchKind, reason: String)
        /// The plugin is loaded and its delegate exists.
        case ready
        case launchFailed(String)
        case acknowledged(id: UInt64, returned: Bool?, snapshot: String?)
        case taskBegan(id: UInt64, name: String?)
        case taskEnded(id: UInt64)
        case warning(String)
        /// Something the app did that the host records as an event of its own (`taskSubmitted`…).
        case info(String, String?)
        /// Every thread of the app is verified stopped.
        case suspensionVerified
        case exited(ProcessExit)
        case protocolViolation(String)
        /// Time passed: deadlines at or before `now` fire.
        case tick
        case moveToForeground
        case moveToBackground
        case interrupt(Duration?)
        case endInterruption
        case terminate(byUser: Bool)
        /// Resume a suspended app into the background (sequence 6); the seam where background
        /// events (fetch, push, tasks) will be delivered.
        case wakeInBackground
        /// Deliver a background event: launch the app into the background for it (sequence 5,
        /// with `reason` in the launch options), resume it there if suspended (sequence 6), or
        /// hand it over where it runs (a remote notification reaches a foreground app too).
        case deliver(BackgroundEvent, reason: String)
        /// The app called a completion handler or `setTaskCompleted(success:)`.
        case workCompleted(id: UInt64, result: String)
        /// End running BGTaskScheduler tasks early (`expire APP [ID]`): their expiration
        /// handlers run now and the grace period starts. Nil: every running task.
        case expireWork(ids: [UInt64]?, reason: String)
        /// The background time of `beginBackgroundTask` grants ends now (`expire APP`).
        case expireBackgroundTime
        /// The host's simulated power or network changed: processing tasks needing what is gone end.
        case conditionsChanged(externalPower: Bool, network: Bool)
        /// Kill now, without a callback: the host was told to stop at once (a second Ctrl-C).
        case abort
        case memoryWarning
        /// A host rule ends the app now, without a callback: a forbidden system call, too many
        /// sandbox violations.
        case enforce(Termination)
    }

    package enum Action: Sendable, Equatable {
        case spawn(reason: String)
        case send(WireCallbackRequest)
        case expire(taskIDs: [UInt64], remaining: Double)
        /// Run this BGTaskScheduler task's expiration handler.
        case expireWork(UInt64)
        case freeze
        case thaw
        /// End the process now, without a callback.
        case kill(Termination)
        case event(LifecycleEvent)
        /// The process is gone; write the report.
        case finished(Termination, ProcessExit)
    }

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
        /// Killed; waiting for the process to end.
        case terminating
        case terminated
    }

    /// Where the host wants the app.
    private enum Placement: Equatable {
        case foreground
        case interrupted
        case background
        case terminated
    }

    private enum Timer: Hashable {
        case launch
        case callback
        case backgroundWarning
        case backgroundEnd
        case interruption
        /// A piece of background work's budget, or the grace after its expiration.
        case work(UInt64)
    }

    /// Background work under way: an event delivered whose completion has not come.
    package struct Work: Sendable, Equatable {
        package var event: BackgroundEvent
        /// Why the host ended it early, once it has.
        package var expiredBecause: String?
    }

    private struct InFlight {
        var id: UInt64
        var callback: WireCallback
        /// What the app observes while it runs.
        var state: WireApplicationState
        var budget: Duration
        var isLaunch: Bool
        var detail: String?
    }

    package let policy: Policy
    package private(set) var phase: Phase = .notRunning
    /// Open background tasks, by identifier, with their names.
    package private(set) var openTasks: [UInt64: String] = [:]
    /// When the app last entered the background, while its background time runs.
    package private(set) var backgroundEnteredAt: HostInstant?
    /// The state the app was in when the host decided to end it (or it ended): inside a callback,
    /// the state the app observed there.
    package private(set) var finalState: AppState = .notRunning

    private var placement: Placement = .foreground
    private var launchKind: LaunchKind = .foreground
    private var inFlight: InFlight?
    private var nextCallbackID: UInt64 = 1
    private var deadlines: [Timer: HostInstant] = [:]
    /// Spawn plus the launch budget, until the launch is over; bounds every launch callback.
    private var launchDeadline: HostInstant?
    private var needsSnapshot = false
    private var pendingMemoryWarning = false
    /// Background events waiting for the app to be ready for them.
    package private(set) var pendingEvents: [BackgroundEvent] = []
    /// Background work under way, by number.
    package private(set) var work: [UInt64: Work] = [:]
    private var nextWorkID: UInt64 = 1
    private var expirationSent = false
    /// When `expire APP` ended the background time before its budget.
    private var backgroundTimeEndedEarly: HostInstant?
    private var pendingTermination: Termination?
    private var requestedTermination: Termination?

    package init(policy: Policy) {
        self.policy = policy
    }

    /// The app's state as users see it.
    package var state: AppState {
        switch phase {
        case .notRunning: .notRunning
        case .starting, .launching: .launching
        case .launched: launchKind == .foreground ? .inactive : .background
        case .inactive: .inactive
        case .active: .active
        case .background, .suspending, .resumedInBackground: .background
        case .suspended: .suspended
        case .terminating: finalState
        case .terminated: .terminated
        }
    }

    /// Whether the app's process exists (from spawn until its end is observed).
    package var isAlive: Bool { phase != .notRunning && phase != .terminated }

    /// Whether the app is in the foreground, or on its way there.
    package var isInForeground: Bool { placement == .foreground || placement == .interrupted }

    /// When the caller must next deliver `.tick`.
    package var nextDeadline: HostInstant? { deadlines.values.min() }

    /// The background time left, while the app is in the background with its time running.
    package func backgroundTimeRemaining(at now: HostInstant) -> Duration? {
        guard let entered = backgroundEnteredAt else { return nil }
        return max(.zero, now.duration(to: backgroundTimeEndedEarly ?? entered + policy.backgroundTime))
    }

    package mutating func handle(_ input: Input, now: HostInstant) -> [Action] {
        var actions: [Action] = []
        switch input {
        case .launch(let kind, let reason):
            guard phase == .notRunning else { return [] }
            launchKind = kind
            placement = kind == .foreground ? .foreground : .background
            phase = .starting
            launchDeadline = now + policy.launchTimeout
            deadlines[.launch] = launchDeadline
            actions += [.spawn(reason: reason), event("launching", detail: reason)]

        case .ready:
            guard phase == .starting else { return protocolViolation("the app said it was ready twice", now: now) }
            deadlines[.launch] = nil
            phase = .launching
            actions.append(event("loaded"))
            actions += send(.willFinishLaunching, state: launchState, now: now)

        case .launchFailed(let reason):
            actions += kill(Termination(kind: .launchFailed, namespace: .host, code: nil, reason: reason))

        case .acknowledged(let id, let returned, let snapshot):
            guard let flight = inFlight, flight.id == id else {
                return protocolViolation("it acknowledged callback \(id), which was not running", now: now)
            }
            inFlight = nil
            deadlines[.callback] = nil
            actions += acknowledged(flight, returned: returned, snapshot: snapshot, now: now)

        case .taskBegan(let id, let name):
            guard isAlive, phase != .terminating else { return [] }
            openTasks[id] = name ?? ""
            actions.append(event("backgroundTaskBegan", detail: taskLabel(id)))
            if openTasks.count > policy.maximumBackgroundTasks {
                actions += kill(Termination(
                    kind: .tooManyBackgroundTasks, namespace: .runningBoard,
                    code: TerminationCode.tooManyBackgroundTasks.rawValue,
                    reason: "opened \(openTasks.count) background tasks at once; the limit is \(policy.maximumBackgroundTasks)"))
            }

        case .taskEnded(let id):
            guard isAlive, phase != .terminating, openTasks[id] != nil else { return [] }
            let label = taskLabel(id)
            openTasks[id] = nil
            actions.append(event("backgroundTaskEnded", detail: label))

        case .warning(let text):
            actions.append(event("warning", detail: text))

        case .info(let name, let detail):
            actions.append(event(name, detail: detail))

        case .suspensionVerified:
            guard phase == .suspending else { return [] }
            phase = .suspended
            actions.append(event("suspended"))
            if let next = pendingEvents.first {
                // An event arrived while the app was being suspended.
                phase = .resumedInBackground
                actions += [.thaw, event("resumed", detail: "in the background for a \(next.label)")]
            }

        case .exited(let exit):
            guard isAlive else { return [] }
            let termination = pendingTermination ?? unexpectedEnd(exit)
            if pendingTermination == nil { finalState = observedStateForReport }
            phase = .terminated
            inFlight = nil
            deadlines.removeAll()
            backgroundEnteredAt = nil
            return [.finished(termination, exit)]

        case .protocolViolation(let what):
            return protocolViolation(what, now: now)

        case .enforce(let termination):
            return kill(termination)

        case .tick:
            actions += fireDeadlines(now: now)

        case .moveToForeground:
            if phase == .notRunning { return handle(.launch(.foreground, reason: "user"), now: now) }
            guard placement != .terminated else { return [] }
            placement = .foreground
            deadlines[.interruption] = nil
            // A processing task ends at once when the user opens the app; it is not held to it.
            for (id, item) in work.sorted(by: { $0.key < $1.key }) where item.event.kind == .processing {
                actions += expire(work: id, because: "the user opened the app", now: now)
                work[id] = nil
                deadlines[.work(id)] = nil
            }

        case .moveToBackground:
            guard placement != .terminated, isAlive else { return [] }
            placement = .background
            deadlines[.interruption] = nil

        case .interrupt(let duration):
            guard isAlive, isInForeground else { return [] }
            placement = .interrupted
            deadlines[.interruption] = duration.map { now + $0 }

        case .endInterruption:
            guard placement == .interrupted else { return [] }
            placement = .foreground
            deadlines[.interruption] = nil

        case .terminate(let byUser):
            guard isAlive, placement != .terminated else { return [] }
            placement = .terminated
            requestedTermination = byUser
                ? Termination(
                    kind: .userTerminated, namespace: .user, code: nil,
                    reason: "terminated by the user; applicationWillTerminate(_:) returned")
                : Termination(
                    kind: .hostShutdown, namespace: .host, code: nil,
                    reason: "the host shut down; applicationWillTerminate(_:) returned")
            if phase == .starting {
                actions += kill(Termination(
                    kind: requestedTermination!.kind, namespace: requestedTermination!.namespace, code: nil,
                    reason: byUser ? "terminated by the user before it finished loading" : "the host shut down before the app finished loading"))
            }

        case .wakeInBackground:
            if phase == .notRunning { return handle(.launch(.background, reason: "background"), now: now) }
            guard phase == .suspended, placement == .background else { return [] }
            phase = .resumedInBackground
            actions += [.thaw, event("resumed", detail: "in the background")]

        case .deliver(let backgroundEvent, let reason):
            if phase == .notRunning {
                pendingEvents = [backgroundEvent]
                return handle(.launch(.background, reason: reason), now: now)
            }
            guard isAlive, phase != .terminating, placement != .terminated else { return [] }
            pendingEvents.append(backgroundEvent)
            if phase == .suspended {
                phase = .resumedInBackground
                actions += [.thaw, event("resumed", detail: "in the background for a \(backgroundEvent.label)")]
            }

        case .workCompleted(let id, let result):
            guard isAlive, phase != .terminating, let done = work.removeValue(forKey: id) else { return [] }
            deadlines[.work(id)] = nil
            needsSnapshot = true
            switch done.event.kind {
            case .fetch: actions.append(event("fetchCompleted", detail: result))
            case .remoteNotification: actions.append(event("notificationCompleted", detail: result))
            case .appRefresh, .processing:
                actions.append(event("taskCompleted", detail: "\(done.event.taskIdentifier ?? "?") \(result)"))
            }

        case .expireWork(let ids, let reason):
            let targets = (ids ?? Array(work.keys)).sorted().filter { work[$0]?.event.isTask == true && work[$0]?.expiredBecause == nil }
            for id in targets { actions += expire(work: id, because: reason, now: now) }

        case .expireBackgroundTime:
            guard backgroundEnteredAt != nil, !openTasks.isEmpty, phase != .terminating else { return [] }
            backgroundTimeEndedEarly = now
            expirationSent = true
            deadlines[.backgroundWarning] = nil
            deadlines[.backgroundEnd] = now + policy.expirationGrace
            let ids = openTasks.keys.sorted()
            actions.append(event("expiration", detail: ids.map(taskLabel).joined(separator: ", ")))
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
        }
        actions += reconcile(now: now)
        return actions
    }

    // MARK: Callbacks

    /// The state the app observes while it launches.
    private var launchState: WireApplicationState { launchKind == .foreground ? .inactive : .background }

    /// The state the app observes now, for callbacks that do not change it.
    private var observedState: WireApplicationState {
        switch phase {
        case .active: .active
        case .background, .suspending, .suspended, .resumedInBackground: .background
        case .launching, .starting: launchState
        case .launched: launchState
        default: .inactive
        }
    }

    private mutating func send(
        _ callback: WireCallback, state: WireApplicationState, after: WireApplicationState? = nil,
        remaining: Duration? = nil, event backgroundEvent: WireBackgroundEvent? = nil, detail: String? = nil,
        now: HostInstant
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
        return [.send(WireCallbackRequest(
            id: id, callback: callback, state: state, stateAfter: after, backgroundTimeRemaining: remaining?.seconds,
            event: backgroundEvent))]
    }

    /// Sends a background event's callback; its work starts now, with its budget.
    private mutating func deliver(_ backgroundEvent: BackgroundEvent, state: WireApplicationState, now: HostInstant) -> [Action] {
        let id = nextWorkID
        nextWorkID += 1
        work[id] = Work(event: backgroundEvent)
        deadlines[.work(id)] = now + budget(of: backgroundEvent.kind)
        let wire = WireBackgroundEvent(
            work: id, kind: backgroundEvent.kind, taskIdentifier: backgroundEvent.taskIdentifier, payload: backgroundEvent.payload)
        return send(backgroundEvent.callback, state: state, event: wire, detail: backgroundEvent.taskIdentifier, now: now)
    }

    /// The time a piece of background work has to complete.
    private func budget(of kind: WireBackgroundEvent.Kind) -> Duration {
        switch kind {
        case .fetch, .remoteNotification: policy.backgroundFetchTime
        case .appRefresh: policy.appRefreshTaskTime
        case .processing: policy.processingTaskTime
        }
    }

    /// Ends a running task early: its expiration handler runs, and the grace period starts.
    private mutating func expire(work id: UInt64, because reason: String, now: HostInstant) -> [Action] {
        guard var item = work[id], item.event.isTask, item.expiredBecause == nil else { return [] }
        item.expiredBecause = reason
        work[id] = item
        deadlines[.work(id)] = now + policy.expirationGrace
        return [event("taskExpired", detail: "\(item.event.taskIdentifier ?? "?"): \(reason)"), .expireWork(id)]
    }

    private mutating func acknowledged(_ flight: InFlight, returned: Bool?, snapshot: String?, now: HostInstant) -> [Action] {
        switch flight.callback {
        case .willFinishLaunching, .didFinishLaunching:
            if returned == false {
                return kill(Termination(
                    kind: .launchFailed, namespace: .host, code: nil,
                    reason: "\(flight.callback.delegateMethodName) returned false"))
            }
            if flight.callback == .willFinishLaunching {
                return [event("willFinishLaunching")] + send(.didFinishLaunching, state: launchState, now: now)
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
            return [event("willTerminate")] + kill(requestedTermination!)
        case .didReceiveMemoryWarning:
            break
        case .snapshot:
            return [event("snapshot", detail: snapshot ?? "")]
        case .performFetch, .didReceiveRemoteNotification, .launchTask:
            break
        }
        return [event(flight.callback.rawValue, detail: flight.detail)]
    }

    // MARK: Moving towards the placement

    /// When no callback is running, starts the next step towards where the host wants the app.
    private mutating func reconcile(now: HostInstant) -> [Action] {
        guard inFlight == nil else { return [] }
        switch phase {
        case .notRunning, .starting, .launching, .suspending, .terminating, .terminated: return []
        default: break
        }
        if placement == .terminated {
            guard phase != .suspended else {
                let request = requestedTermination!
                let forceQuit = request.kind == .userTerminated
                return kill(Termination(
                    kind: forceQuit ? .forceQuit : request.kind, namespace: request.namespace, code: nil,
                    reason: forceQuit
                        ? "force quit by the user while suspended (no callback)"
                        : "the host shut down; the suspended app was ended without a callback"))
            }
            return send(.willTerminate, state: observedState, now: now)
        }
        if pendingMemoryWarning && phase != .suspended {
            pendingMemoryWarning = false
            return send(.didReceiveMemoryWarning, state: observedState, now: now)
        }
        switch (phase, placement) {
        case (.launched, .foreground) where launchKind == .foreground:
            return send(.didBecomeActive, state: .active, now: now)
        case (.launched, .interrupted) where launchKind == .foreground:
            phase = .inactive
            return [event("interrupted")]
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
            // A remote notification reaches the foreground app; other events wait for the background.
            guard let index = pendingEvents.firstIndex(where: { $0.kind == .remoteNotification }) else { return [] }
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
            guard openTasks.isEmpty, work.isEmpty else { return [] }
            endBackgroundTime()
            phase = .suspending
            return [.freeze]
        case (.suspended, .foreground), (.suspended, .interrupted):
            phase = .background
            return [.thaw, event("resumed")] + reconcile(now: now)
        default:
            return []
        }
    }

    private mutating func endBackgroundTime() {
        backgroundEnteredAt = nil
        backgroundTimeEndedEarly = nil
        deadlines[.backgroundWarning] = nil
        deadlines[.backgroundEnd] = nil
    }

    // MARK: Time

    private mutating func fireDeadlines(now: HostInstant) -> [Action] {
        var actions: [Action] = []
        for (timer, deadline) in deadlines.sorted(by: { $0.value < $1.value }) where deadline <= now {
            guard deadlines[timer] != nil, phase != .terminating else { continue }
            deadlines[timer] = nil
            switch timer {
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
                let ids = openTasks.keys.sorted()
                actions.append(event("expiration", detail: ids.map(taskLabel).joined(separator: ", ")))
                actions.append(.expire(taskIDs: ids, remaining: policy.expirationWarning.seconds))
            case .backgroundEnd:
                guard !openTasks.isEmpty else { break }
                let tasks = openTasks.keys.sorted().map(taskLabel).joined(separator: ", ")
                actions += kill(Termination(
                    kind: .backgroundTime, namespace: .runningBoard, code: TerminationCode.backgroundTimeExhausted.rawValue,
                    reason: "background task \(tasks) still open \(policy.expirationGrace.formatted) after its background time (\(policy.backgroundTime.formatted)) ran out"))
            case .interruption:
                if placement == .interrupted { placement = .foreground }
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

    // MARK: Ending

    private mutating func kill(_ termination: Termination) -> [Action] {
        guard isAlive, phase != .terminating else { return [] }
        finalState = observedStateForReport
        pendingTermination = termination
        phase = .terminating
        inFlight = nil
        deadlines.removeAll()
        return [.kill(termination)]
    }

    private mutating func protocolViolation(_ what: String, now: HostInstant) -> [Action] {
        kill(Termination(kind: .protocolViolation, namespace: .host, code: nil, reason: "broke the control protocol: \(what)"))
    }

    /// The app's process ended without the host deciding it: a crash or an exit.
    private func unexpectedEnd(_ exit: ProcessExit) -> Termination {
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
    private var observedStateForReport: AppState {
        guard let flight = inFlight, phase != .starting else { return state }
        switch flight.state {
        case .active: return .active
        case .inactive: return .inactive
        case .background: return .background
        }
    }

    private func event(_ name: String, detail: String? = nil) -> Action {
        .event(LifecycleEvent(name: name, state: state, detail: detail))
    }

    private func taskLabel(_ id: UInt64) -> String {
        let name = openTasks[id] ?? ""
        return name.isEmpty ? "#\(id)" : "#\(id) \"\(name)\""
    }
}
