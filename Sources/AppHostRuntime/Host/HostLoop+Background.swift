import Foundation
import Dispatch
import AppHostProtocol

// Background execution on demand (docs/lifecycle.md, "The life cycle", sequences 5 and 6, and
// "Background modes"): the commands that trigger each mode (`fetch`, `run-task`, `expire`,
// `push`), the simulated conditions and the scheduler's clock. The Scheduler says whether an
// app may be woken and why not, the machine what an event does to the app; this routes.

extension HostLoop {
    // MARK: Commands

    /// Delivers `application(_:performFetchWithCompletionHandler:)` now (`fetch APP`).
    func fetch(_ name: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            if let refusal = scheduler.refusalToFetch(scheduleFacts(record), shuttingDown: waiters.isShuttingDown) { throw refusal }
            return announce(record, command: .fetch, "performFetch", deliver(BackgroundEvent(kind: .fetch), to: record))
        }
    }

    /// Runs a registered BGTaskScheduler task now, due or not (`run-task APP IDENTIFIER`). Its
    /// kind is the pending request's, else that of the identifier's last request, else a refresh
    /// task if the app has the fetch mode.
    func runTask(_ name: String, identifier: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            let bundle = record.bundle
            let (kind, pending) = scheduler.runEarly(identifier, for: bundle)
            if let refusal = scheduler.refusalToRun(identifier, kind: kind, scheduleFacts(record), shuttingDown: waiters.isShuttingDown) {
                throw refusal
            }
            // Run early, but run: the scheduler's next run of it keeps its interval from now.
            scheduler.ran(identifier, for: bundle.identifier)
            let event = BackgroundEvent(
                kind: kind == .appRefresh ? .appRefresh : .processing, taskIdentifier: identifier,
                requiresExternalPower: pending?.requiresExternalPower ?? false,
                requiresNetworkConnectivity: pending?.requiresNetworkConnectivity ?? false)
            let how = deliver(event, to: record)
            return announce(record, command: .runTask, "\(event.label)\(pending == nil ? "" : " (its pending request, run early)")", how)
        }
    }

    /// Ends background work now (`expire APP [IDENTIFIER]`): the running BGTaskScheduler task with
    /// this identifier, or every running task and the background time of every open
    /// `beginBackgroundTask`. Expiration handlers run now; the grace period starts.
    func expire(_ name: String, identifier: String?) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            let machine = record.run?.machine ?? LifecycleMachine(policy: configuration.policy)
            if let refusal = machine.refusal(of: .expireBackgroundTime) {
                throw SupervisorError("\(record.bundle.name) \(refusal)", code: .wrongState)
            }
            let (tasks, grants) = machine.expirable(identifier: identifier)
            guard let run = record.run, !tasks.isEmpty || grants > 0 else {
                throw SupervisorError(identifier.map { "\(record.bundle.name) runs no task \($0) that has not expired" }
                    ?? "\(record.bundle.name) has nothing to expire: no running BGTaskScheduler task and no background task in the background", code: .wrongState)
            }
            var parts = tasks.values.map(\.label).sorted()
            if grants > 0 { parts.append("the background time of \(grants) background task\(grants == 1 ? "" : "s")") }
            handle(record, run, .expireWork(ids: Array(tasks.keys), reason: "expired on demand"))
            if grants > 0 { handle(record, run, .expireBackgroundTime) }
            return announce(record, command: .expire, "expired \(parts.joined(separator: ", "))", nil)
        }
    }

    /// Delivers a remote notification (`push APP FILE.json`). Only a background notification
    /// wakes an app: its `aps` must have `"content-available": 1`.
    func push(_ name: String, payload: Data, source: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            if let lacking = Scheduler.lacking(.remoteNotification, scheduleFacts(record), for: "a background notification") { throw lacking }
            let event = try Scheduler.backgroundNotification(payload, from: source)
            try refuseUnreachable(record, pushOnly: true)
            return announce(record, command: .push, "didReceiveRemoteNotification from \(source)", deliver(event, to: record))
        }
    }

    /// Sets the simulated power source (`power plugged|battery`). Unplugging ends processing
    /// tasks that need external power; plugging in may make requests due.
    func setPower(_ state: PowerState) -> String {
        queue.sync {
            let previous = scheduler.setPower(state)
            return conditionsChanged("power: \(state.rawValue)\(previous == state ? " (unchanged)" : " (was \(previous.rawValue))")")
        }
    }

    /// Sets the simulated network (`network online|offline`).
    func setNetwork(_ state: NetworkState) -> String {
        queue.sync {
            let previous = scheduler.setNetwork(state)
            return conditionsChanged("network: \(state.rawValue)\(previous == state ? " (unchanged)" : " (was \(previous.rawValue))")")
        }
    }

    /// Moves the scheduler's clock on (`advance SECONDS`): requests and fetches due by then run.
    /// Only the scheduler's dates move; background budgets and watchdogs keep real time.
    func advance(by duration: Duration) -> String {
        queue.sync {
            scheduler.advance(by: duration)
            let started = runDueWork() + reconsiderTransfers() + deliverDueNotifications()
            let now = HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: scheduler.now))
            // Requests whose date has come but whose identifier ran too recently: say so, or
            // "nothing became due" would hide why they did not run.
            let held = scheduler.heldByTheirInterval
            let line = "scheduler clock moved \(duration.formatted) on, to \(now); "
                + (started.isEmpty ? "nothing became due" : "started \(started.joined(separator: ", "))")
                + (held.isEmpty ? "" : "; \(held.joined(separator: ", ")) \(held.count == 1 ? "waits" : "wait") for the minimum interval between runs (tasks says until when)")
            publish(HostEvent(time: Date(), event: .advance, detail: line), run: nil)
            return line
        }
    }

    /// Puts the scheduler's clock back on real time (`advance reset`), dropping the offset
    /// `advance` gave it, which the store keeps across hosts. Pending requests keep their dates.
    func resetClock() -> String {
        queue.sync {
            let offset = scheduler.resetClock()
            runDueWork()
            let line = "scheduler clock reset to real time, \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: scheduler.now)))"
                + (offset == .zero ? " (it was on real time already)" : " (it was \(offset.formatted) ahead)")
            publish(HostEvent(time: Date(), event: .advance, detail: line), run: nil)
            return line
        }
    }

    /// The scheduler's clock: its offset from real time and its time now.
    var schedulerClock: SchedulerClock {
        queue.sync { scheduler.clock }
    }

    /// Every pending request of the installed apps, and why each waits.
    func pendingTaskRequests() -> [PendingTaskRequest] {
        queue.sync {
            apps.flatMap { record -> [PendingTaskRequest] in
                let inForeground = record.run.map { $0.machine.isAlive && $0.machine.isInForeground } ?? false
                return scheduler.waiting(for: record.bundle.identifier, inForeground: inForeground).map { request, waiting in
                    PendingTaskRequest(
                        app: record.bundle.name, bundleIdentifier: record.bundle.identifier, identifier: request.identifier,
                        kind: request.kind == .appRefresh ? "refresh" : "processing",
                        earliestBeginDate: request.earliestBeginDate.map(Date.init(timeIntervalSince1970:)),
                        requiresExternalPower: request.requiresExternalPower,
                        requiresNetworkConnectivity: request.requiresNetworkConnectivity, waitingFor: waiting)
                }
            }
        }
    }

    // MARK: Delivering

    /// Hands the event to the app, launching it into the background or resuming it there as
    /// needed; returns how, for the announcement.
    func deliver(_ event: BackgroundEvent, to record: AppRecord) -> String {
        let reason = event.launchReason
        guard let run = record.run, run.machine.isAlive else {
            start(record, kind: .background, reason: reason, event: event)
            return "launching it into the background (launch reason \(reason))"
        }
        let how: String
        switch run.machine.phase {
        case .suspended, .suspending:
            how = "resuming it in the background"
        case .background:
            how = "it runs in the background"
        case .active, .inactive:
            how = "in the foreground"
        default:
            how = "queued until it is ready (it is \(run.machine.state.rawValue))"
        }
        handle(record, run, .deliver(event, reason: reason))
        return how
    }

    /// Publishes what a command or the scheduler did, as an event of the app, and returns the line.
    @discardableResult
    func announce(_ record: AppRecord, command: EventName, _ what: String, _ how: String?) -> String {
        let line = "\(record.bundle.name): \(what)\(how.map { "; \($0)" } ?? "")"
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: record.run?.process?.pid,
            event: command, state: currentState(of: record), detail: line), run: record.run)
        return line
    }

    /// Refuses an event iOS would not deliver now: to a force-quit app, to an app being
    /// terminated, or (except a notification) to the foreground app.
    func refuseUnreachable(_ record: AppRecord, pushOnly: Bool) throws {
        if let refusal = scheduler.refusalToWake(scheduleFacts(record), pushOnly: pushOnly, shuttingDown: waiters.isShuttingDown) {
            throw refusal
        }
    }

    /// Ends processing tasks whose conditions no longer hold, starts what became due, and returns
    /// the line to print.
    func conditionsChanged(_ line: String) -> String {
        for record in apps {
            if let run = record.run, run.machine.isAlive {
                handle(record, run, .conditionsChanged(
                    externalPower: scheduler.conditions.power == .plugged, network: scheduler.conditions.network == .online))
            }
        }
        let started = runDueWork() + reconsiderTransfers()
        let full = line + (started.isEmpty ? "" : "; started \(started.joined(separator: ", "))")
        publish(HostEvent(time: Date(), event: .conditions, detail: full), run: nil)
        return full
    }

}
