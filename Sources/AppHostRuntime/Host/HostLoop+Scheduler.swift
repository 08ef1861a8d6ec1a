import Foundation
import Dispatch
import AppHostProtocol

/// The BGTaskScheduler side of the host: the scheduler pass over the persisted requests, and
/// what apps say about their tasks and fetch intervals.
extension HostLoop {
    // MARK: The scheduler

    /// Runs the scheduler once the current work on the queue is done (after a state change, an
    /// installation): an app that leaves the foreground may have requests waiting for it.
    func queueSchedulerPass() {
        // On the queue, behind what is already there (the first command, say), not on the timer:
        // the pass sees the host as that work leaves it, in order.
        guard scheduler.queuePass() else { return }
        post(.pass(.scheduler))
    }

    /// Starts every due fetch and request whose conditions hold, for apps that may be woken now
    /// (the scheduler decides), and sets the timer for the next date something becomes due.
    /// Returns what it started.
    @discardableResult
    func runDueWork() -> [String] {
        // Only apps with something scheduled, in installation order: a pass runs after every
        // state change, and a host may hold thousands of suspended apps that asked for nothing.
        let pass = scheduler.takeDueWork(apps: scheduledApps.map(scheduleFacts), shuttingDown: waiters.isShuttingDown)
        switch pass.save {
        case nil:
            break
        case .later:
            scheduler.save()
        case .now:
            // On the loop, as a rare exception (once per due request or fetch, a small file).
            do {
                try scheduler.keepTaken()
            } catch {
                schedulerStoreFailed(error)
            }
        }
        var started: [String] = []
        for effect in pass.effects {
            switch effect {
            case .warn(let id, let warning):
                let record = apps[id]
                publish(HostEvent(
                    time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: record.run?.process?.pid, event: .warning,
                    detail: warning), run: record.run)
            case .deliver(let id, let event):
                let record = apps[id]
                started.append("\(record.bundle.name) \(event.label)")
                let how = deliver(event, to: record)
                announce(record, command: .scheduler, "due: \(event.label)", how)
            }
        }
        let next = scheduler.untilNextDue(apps: scheduledApps.map(\.bundle.identifier))
        timers.set(.scheduler, at: next.map { clock.now + $0 })
        return started
    }

    /// The scheduler's store could not be written: what it holds lives on in this host.
    func schedulerStoreFailed(_ error: any Error) {
        publish(HostEvent(time: Date(), event: .warning, detail: "cannot save the scheduler's store: \(error)"), run: nil)
    }

    /// The installed apps the scheduler holds something for, in installation order.
    var scheduledApps: [AppRecord] {
        apps.records(identifiers: scheduler.apps)
    }

    /// What the scheduler is told of the app: its modes, and its process while it is alive.
    func scheduleFacts(_ record: AppRecord) -> Scheduler.AppFacts {
        let run = record.run
        let machine = run?.machine
        return Scheduler.AppFacts(
            id: record.id, identifier: record.bundle.identifier, name: record.bundle.name, backgroundModes: record.bundle.backgroundModes,
            permittedTasks: record.bundle.permittedTaskIdentifiers,
            run: machine.flatMap { machine in
                guard let run, machine.isAlive else { return nil }
                return Scheduler.RunFacts(
                    state: machine.state, launchFinished: machine.launchFinished, inForeground: machine.isInForeground,
                    isEnding: machine.isEnding, registeredTasks: run.registeredTasks)
            },
            runningTasks: machine?.runningTaskIdentifiers ?? [])
    }

    /// Says, once it is on the disk, that a change the app asked for is kept: through its machine
    /// while the run that asked lives, else as the app's event all the same (an app that ended,
    /// or a host that quit, before the write: what is kept is said).
    func sayKept(_ name: EventName, _ detail: String, by id: RunID) {
        let record = apps[id.app]
        if let (record, run) = current(id), run.machine.isAlive {
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

    /// The user force quit the app (Scheduler's `processEnded`): its transfers are cancelled.
    func forceQuit(_ record: AppRecord) {
        cancelTransfers(of: record, because: "the user force quit the app", reasonCode: 0)
        // Removed from the app switcher: its scene sessions are discarded (told at its next launch).
        if record.bundle.adoptsScenes { scenes.forceQuit(record.bundle.identifier) }
    }

    func backgroundTasksConfiguration(for bundle: AppBundle) -> WireBackgroundTasks {
        scheduler.launchConfiguration(for: bundle)
    }

    // MARK: The app's messages

    func receiveBackgroundMessage(_ message: AppMessage, _ record: AppRecord, _ run: AppRun) {
        let bundle = record.bundle
        switch message {
        case .workCompleted(let id, let result):
            handle(record, run, .workCompleted(id: id, result: result))

        case .registerTask(let identifier):
            switch Scheduler.registration(
                identifier, registered: run.registeredTasks, launchFinished: run.machine.launchFinished, permitted: bundle.permittedTaskIdentifiers) {
            case .accepted: run.registeredTasks.insert(identifier)
            case .ignored(let warning): handle(record, run, .warning(warning))
            case .terminated(let termination): handle(record, run, .enforce(termination))
            }

        case .submitTask(let request):
            // What tells anyone that it is kept (the taskSubmitted event) waits for it to be on
            // the disk, so a host killed at any moment never said it kept a request it lost.
            let submitted = Scheduler.describe(request)
            switch scheduler.submit(request, for: bundle, kept: { [weak self, id = run.id] in self?.post(.kept(id, .taskSubmitted, submitted)) }) {
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
            switch scheduler.answerFetchInterval(interval, modes: bundle.backgroundModes) {
            case .refused(let warning):
                handle(record, run, .warning(warning))
                return
            case .granted(let detail):
                // Said once it is kept, as a submission is.
                scheduler.setFetchInterval(interval, for: bundle.identifier, kept: { [weak self, id = run.id] in self?.post(.kept(id, .fetchInterval, detail)) })
            }
            queueSchedulerPass()

        default:
            break
        }
    }
}
