import Foundation
import Dispatch
import AppHostProtocol

// Background execution (README.md, "The life cycle", sequences 5 and 6, and "Background modes"): the
// scheduler that runs due requests and fetches, the app's BGTaskScheduler messages, and the
// commands that trigger each mode on demand. The life-cycle machine delivers the events; this
// decides when and whether.

/// The BGTaskScheduler side of the host: the scheduler pass over the persisted requests, and
/// what apps say about their tasks and fetch intervals.
extension Supervisor {
    // MARK: The scheduler

    /// Runs the scheduler once the current work on the queue is done (after a state change, an
    /// installation): an app that leaves the foreground may have requests waiting for it.
    func queueSchedulerPass() {
        // On the queue, behind what is already there (the first command, say), not on the timer:
        // the pass sees the host as that work leaves it, in order.
        guard scheduler.queuePass() else { return }
        queue.async { [weak self] in
            guard let self else { return }
            scheduler.passRuns()
            runDueWork()
        }
    }

    /// Starts every due fetch and request whose conditions hold, for apps that may be woken now,
    /// and sets the timer for the next date something becomes due. Returns what it started.
    @discardableResult
    func runDueWork() -> [String] {
        var started: [String] = []
        var due: [(AppRecord, BackgroundEvent)] = []
        var changed = false
        // Only apps with something scheduled, in installation order: a pass runs after every
        // state change, and a host may hold thousands of suspended apps that asked for nothing.
        for record in scheduledApps where mayWakeForSchedule(record) {
            let id = record.bundle.identifier
            let running = record.run.map { run in
                Set((run.machine.work.values.map(\.event) + run.machine.pendingEvents).compactMap(\.taskIdentifier))
            } ?? []
            let (fetch, tasks) = scheduler.takeDue(for: id, running: running)
            changed = changed || fetch || !tasks.isEmpty
            var events: [BackgroundEvent] = []
            if fetch && record.bundle.backgroundModes.contains(.fetch) { events.append(BackgroundEvent(kind: .fetch)) }
            for request in tasks {
                if let run = record.run, run.machine.isAlive, run.machine.launchFinished, !run.registeredTasks.contains(request.identifier) {
                    try? scheduler.began(request.identifier, for: id)  // spent: dropped, never run
                    publish(HostEvent(
                        time: Date(), app: id, name: record.bundle.name, pid: run.process?.pid, event: .warning,
                        detail: "dropped the due request \(request.identifier): the app registered no launch handler for it"), run: run)
                    continue
                }
                events.append(BackgroundEvent(
                    kind: request.kind == .appRefresh ? .appRefresh : .processing, taskIdentifier: request.identifier,
                    requiresExternalPower: request.requiresExternalPower, requiresNetworkConnectivity: request.requiresNetworkConnectivity))
            }
            for event in events {
                due.append((record, event))
                started.append("\(record.bundle.name) \(event.label)")
            }
        }
        if changed {
            if due.isEmpty {
                scheduler.save()
            } else {
                // A request taken runs once its removal is on the disk: a host killed in between
                // neither ran it nor lost it, and a command that comes next sees it under way.
                // On the loop, as a rare exception (once per due request or fetch, a small file).
                do {
                    try scheduler.keepTaken()
                } catch {
                    publish(HostEvent(time: Date(), event: .warning, detail: "cannot save the scheduler's store: \(error)"), run: nil)
                }
            }
        }
        for (record, event) in due {
            let how = deliver(event, reason: event.kind == .fetch ? "backgroundFetch" : "backgroundTask", to: record)
            announce(record, command: .scheduler, "due: \(event.label)", how)
        }
        // The scheduler's dates are the wall clock's (shifted by `advance`); the host's timer
        // runs on the monotonic clock: each pass sets it again from the wall clock's now.
        let next = scheduler.nextDate(apps: scheduledApps.map(\.bundle.identifier))
        timers.set(.scheduler, at: next.map { clock.now + .seconds(double: max(0, $0 - scheduler.now)) })
        return started
    }

    /// The installed apps the scheduler holds something for, in installation order.
    var scheduledApps: [AppRecord] {
        apps.records(identifiers: scheduler.apps)
    }

    /// Whether the scheduler may wake the app now: not force quit, not in the foreground, not
    /// launching to it nor being terminated.
    func mayWakeForSchedule(_ record: AppRecord) -> Bool {
        guard !scheduler.isForceQuit(record.bundle.identifier) else { return false }
        guard let run = record.run, run.machine.isAlive else { return !waiters.isShuttingDown }
        return !run.machine.isInForeground && !run.machine.isEnding
    }

    /// Says, once it is on the disk, that a change the app asked for is kept: through its machine
    /// while the run that asked lives, else as the app's event all the same (an app that ended,
    /// or a host that quit, before the write: what is kept is said).
    func sayKept(_ name: EventName, _ detail: String, _ record: AppRecord, _ run: AppRun) {
        guard record.run !== run || !run.machine.isAlive else {
            handle(record, run, .info(name, detail))
            return
        }
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: nil,
            event: name, state: currentState(of: record), detail: detail), run: nil)
    }

    /// The user opened the app: it may be woken in the background again.
    func userOpened(_ record: AppRecord) {
        scheduler.setForceQuit(false, for: record.bundle.identifier)
    }

    /// The user terminated the app: no background launch until they open it again (iOS's rule).
    func userForceQuit(_ record: AppRecord) {
        scheduler.setForceQuit(true, for: record.bundle.identifier)
        cancelTransfers(of: record, because: "the user force quit the app", reasonCode: 0)
        // Removed from the app switcher: its scene sessions are discarded (told at its next launch).
        if record.bundle.adoptsScenes { scenes.forceQuit(record.bundle.identifier) }
    }

    func backgroundTasksConfiguration(for bundle: AppBundle) -> WireBackgroundTasks {
        WireBackgroundTasks(
            modes: bundle.backgroundModes.map(\.rawValue).sorted(), permittedIdentifiers: bundle.permittedTaskIdentifiers,
            pending: scheduler.pending(for: bundle.identifier),
            maximumPendingRefresh: configuration.policy.maximumPendingRefreshRequests,
            maximumPendingProcessing: configuration.policy.maximumPendingProcessingRequests,
            available: configuration.backgroundAppRefresh)
    }

    // MARK: The app's messages

    func receiveBackgroundMessage(_ message: AppMessage, _ record: AppRecord, _ run: AppRun) {
        let bundle = record.bundle
        switch message {
        case .workCompleted(let id, let result):
            handle(record, run, .workCompleted(id: id, result: result))

        case .registerTask(let identifier):
            switch ResourceRules.register(
                identifier, registered: run.registeredTasks, launchFinished: run.machine.launchFinished, permitted: bundle.permittedTaskIdentifiers) {
            case .accepted: run.registeredTasks.insert(identifier)
            case .ignored(let warning): handle(record, run, .warning(warning))
            case .terminated(let termination): handle(record, run, .enforce(termination))
            }

        case .submitTask(let request):
            // What tells anyone that it is kept (the taskSubmitted event) waits for it to be on
            // the disk, so a host killed at any moment never said it kept a request it lost.
            let submitted = describe(request)
            switch scheduler.submit(request, for: bundle, kept: onTheLoop { [weak self] in self?.sayKept(.taskSubmitted, submitted, record, run) }) {
            case .refused(let refusal):
                handle(record, run, .warning("the host refused the task request \(request.identifier): \(refusal)"))
                return
            case .unchanged:
                handle(record, run, .info(.taskSubmitted, submitted))
            case .submitted:
                break
            }
            queueSchedulerPass()

        case .cancelTask(let identifier):
            let removed = scheduler.cancel(identifier, for: bundle.identifier)
            handle(record, run, .info(.taskCancelled, removed.isEmpty ? "no pending request \(identifier ?? "")" : removed.joined(separator: ", ")))

        case .fetchInterval(let interval):
            guard bundle.backgroundModes.contains(.fetch) else {
                handle(record, run, .warning(
                    "setMinimumBackgroundFetchInterval(_:) called, but Info.plist UIBackgroundModes has no fetch: the app gets no background fetch"))
                return
            }
            let floor = configuration.policy.minimumBackgroundFetchInterval
            let detail = interval.map { "at least \(Duration.seconds(double: max($0, floor.seconds)).formatted) between fetches" } ?? "never"
            // Said once it is kept, as a submission is.
            scheduler.setFetchInterval(interval, for: bundle.identifier, kept: onTheLoop { [weak self] in self?.sayKept(.fetchInterval, detail, record, run) })
            queueSchedulerPass()

        default:
            break
        }
    }

    func describe(_ request: WireTaskRequest) -> String {
        var parts = [request.kind == .appRefresh ? "BGAppRefreshTaskRequest \(request.identifier)" : "BGProcessingTaskRequest \(request.identifier)"]
        if let date = request.earliestBeginDate {
            parts.append("earliest \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: date)))")
        }
        if request.requiresExternalPower { parts.append("requires external power") }
        if request.requiresNetworkConnectivity { parts.append("requires network") }
        return parts.joined(separator: ", ")
    }
}
