#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims
import Logging

extension HostLoop {
    // MARK: The loop

    /// The one way into an app's life-cycle machine. Inputs are taken one at a time, in order:
    /// an input that arrives while another's actions are being performed (an effect that
    /// observed something) waits in the queue, so the machine is never re-entered and never
    /// acts on decisions computed before its last change.
    func handle(_ record: AppRecord, _ run: AppRun, _ input: LifecycleMachine.Input) {
        let drained = inputs.add((record, run, input)) { record, run, input in
            let actions = run.machine.handle(input, now: clock.now)
            apps.follow(record)
            for action in actions { perform(action, record, run) }
            armTimer(run)
        }
        // A launch that took the standby has ended its callbacks: the next is made meanwhile.
        if drained, run.machine.isSettled { launchpad.launchSettled() }
    }


    /// Keeps the machine's next deadline among the host's (HostTimers: one timer for all).
    func armTimer(_ run: AppRun) {
        timers.set(.machine(run.id), at: run.machine.isAlive ? run.machine.nextDeadline : nil)
    }

    /// The host's timer went off: each deadline due goes where it belongs.
    func fireDeadlines() {
        for deadline in timers.take(now: clock.now) {
            switch deadline {
            case .machine(let id):
                let record = apps[id.app]
                guard let run = record.run, run.id == id else { continue }
                handle(record, run, .tick)
            case .sample:
                sample()
                timers.set(.sample, at: resources.nextSample(anyRunning: !apps.running.isEmpty, now: clock.now))
            case .pressure: stepPressure()
            case .scheduler: runDueWork()
            case .route: stepRoute()
            case .notifications: deliverDueNotifications()
            case .transfers:
                transferDesk.beginTimerFired()
                queueTransferPass()
            case .work(let number): timers.run(number)
            }
        }
    }

    func perform(_ action: LifecycleMachine.Action, _ record: AppRecord, _ run: AppRun) {
        let logger = configuration.logger
        let name = record.bundle.name
        switch action {
        case .spawn(let reason, let callbacks):
            spawn(record, run, reason: reason, callbacks: callbacks)
            logger.debug("\(name): spawned for a \(reason) launch, pid \(run.process.map { String($0.pid) } ?? "none")")
        case .send(let callback):
            // What it concerns, from the subsystems that keep it: its scene, a session's transfers.
            let request = transferDesk.prepare(scenes.prepare(callback, for: record.bundle), for: transferApp(record, run))
            run.stepStartedAt = clock.now
            logger.trace("\(name): callback \(request.callback.rawValue) #\(request.id) sent")
            send(.callback(request), record, run)
        case .began(let request):
            // One of the launch's callbacks, which the app runs from its configuration.
            run.stepStartedAt = clock.now
            logger.trace("\(name): callback \(request.callback.rawValue) #\(request.id) runs from the configuration")
        case .expire(let taskIDs, let remaining):
            logger.debug("\(name): expiring background tasks \(taskIDs), \(remaining) s left")
            send(.expire(taskIDs: taskIDs, remaining: remaining), record, run)
        case .expireWork(let work):
            logger.debug("\(name): expiring background work #\(work)")
            send(.expireWork(work), record, run)
        case .withdraw(let id):
            // The app's acknowledgement of didFinishLaunching says whether it came in time.
            logger.trace("\(name): configured callback #\(id) withdrawn")
            send(.withdraw(id: id), record, run)
        case .audioInterruption(let began):
            send(.audioInterruption(began: began), record, run)
        case .freeze:
            logger.debug("\(name): freezing (\(environment.suspensionMechanism.rawValue))")
            freeze(record, run)
        case .thaw:
            logger.debug("\(name): thawing")
            thaw(run)
        case .sampleMainThread:
            recordUsage(run)
            run.backgroundTimeRemainingAtEnd = run.machine.backgroundTimeRemaining(at: clock.now)
            guard let process = run.process else { break }
            process.closeChannel()
            run.mainThreadSample = .requested
            process.requestMainThreadSample()
        case .kill(let termination):
            logger.debug("\(name): killing, \(termination.kind): \(termination.reason)")
            // The figures of the report, as they stand when the host decides.
            recordUsage(run)
            run.backgroundTimeRemainingAtEnd = run.machine.backgroundTimeRemaining(at: clock.now)
            guard let process = run.process else { break }
            if case .requested = run.mainThreadSample { run.mainThreadSample = .unanswered(unansweredSampleReason(process)) }
            if termination.kind == .forbiddenSyscall {
                // It cannot handle SIGSYS (its filter refuses the handler), so it dies of it
                // unless every thread blocks it; the machine escalates to SIGKILL if not.
                process.signal(SIGSYS)
            } else {
                process.killAll()
            }
            // Nothing it sends after this counts. Closed after the signal: the SDK exits by
            // itself (status 0) when its connection closes, which would beat the SIGKILL.
            process.closeChannel()
        case .escalateKill:
            run.process?.killAll()
        case .event(let event):
            emit(event, record, run)
        case .finished(let termination, let exit):
            finish(record, run, termination: termination, exit: exit)
        }
    }

    // MARK: Suspension

    private func freeze(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process else { return }
        run.stepStartedAt = clock.now
        // Heard as an input of its own, never inside this action (a suspender may know at once).
        environment.suspender.freeze(process, isWanted: { [weak run] in
            run?.machine.phase == .suspending && run?.process === process
        }, verified: { [weak self, id = run.id] in self?.post(.frozen(id)) })
    }

    /// Every thread is stopped. Before the app counts as suspended, what it holds is checked: it
    /// can no longer take or release anything, so the check sees exactly what it would keep.
    /// 0xdead10cc if it holds something shared (docs/policy.md, "Resource rules").
    func frozen(_ record: AppRecord, _ run: AppRun) {
        guard run.machine.phase == .suspending, !endIfHoldingSharedResources(record, run) else { return }
        handle(record, run, .suspensionVerified)
    }

    private func thaw(_ run: AppRun) {
        guard let process = run.process else { return }
        run.stepStartedAt = clock.now
        environment.suspender.thaw(process)
    }

    // MARK: Events, the end, reports

    func emit(_ event: LifecycleEvent, _ record: AppRecord, _ run: AppRun) {
        guard !run.isSpawning else { return run.hold(event) }
        // The app began a scheduled task (its launch handler was called): its request is spent.
        if event.name == .launchTask, let identifier = event.detail {
            do {
                try scheduler.began(identifier, for: record.bundle.identifier)
            } catch {
                schedulerStoreFailed(error)
            }
        }
        // Measured first, so that the bookkeeping below is not counted in the step.
        var elapsed: Duration?
        if event.name.isCallback || event.name == .suspended || event.name == .resumed,
           let started = run.stepStartedAt {
            elapsed = started.duration(to: clock.now)
        }
        if event.state != run.lastState {
            account(run, until: ProcFS.cpuTime(pid: run.process?.pid ?? 0))
            let previous = run.lastState
            run.lastState = event.state
            run.stateSince = clock.now
            stateChanged(record, run, from: previous)
            queueSchedulerPass()
            queueTransferPass()
        }
        // Taps that wait for the app to be active, or to run (a background action).
        deliverTaps(record)
        if event.name == .snapshot { run.snapshot = event.detail }
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run.process?.pid,
            event: event.name, state: event.state, detail: event.detail, elapsed: elapsed), run: run)
        resolveWaiters(for: record)
    }

    /// Adds the CPU time used since the last sample to the state the app was in.
    func account(_ run: AppRun, until total: Duration?) {
        if let total { run.account(cpuTotal: total) }
    }

    func reap(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process else { return }
        var status = apphost_child_status()
        guard apphost_waitid_pidfd(process.pidfd, WEXITED | WNOHANG, &status) == 0, status.code != 0 else { return }
        // In a PID namespace, the init wrote how the app process ended (its own resource usage
        // includes the app's, which it reaped).
        let recorded = process.recordedExit()
        let code = recorded?.code ?? Int32(status.code)
        let value = recorded?.status ?? Int32(status.status)
        let exit = ProcessExit(
            status: code == CLD_EXITED ? .exited(value) : .signaled(value, coreDumped: code == CLD_DUMPED),
            userTime: .microseconds(status.user_usec), systemTime: .microseconds(status.system_usec),
            maximumResidentBytes: UInt64(max(0, status.max_rss_kib)) * 1024)
        account(run, until: exit.userTime + exit.systemTime)
        if !run.machine.isEnding {
            run.backgroundTimeRemainingAtEnd = run.machine.backgroundTimeRemaining(at: clock.now)
        }
        // The pidfd and the socket are separate event sources: read what the app sent before it
        // ended (a launch failure's reason, a last acknowledgement) before handling its end.
        // Everything it sent, not one turn's budget: the process is gone, so what is there is all
        // there will be (at most 4 MiB is read).
        for _ in 0..<64 where process.isReadingControl {
            guard readControl(record, run) else { break }
        }
        // A crash record the host had not read yet (its loop was busy): the memory map is gone.
        readDiagnostics(record, run)
        handle(record, run, .exited(exit))
    }

    func finish(_ record: AppRecord, _ run: AppRun, termination: Termination, exit: ProcessExit) {
        if let process = run.process {
            environment.suspender.forget(process)
            process.close()
        }
        timers.set(.machine(run.id), at: nil)

        let pid = run.process?.pid ?? 0
        let diagnostics = diagnostics(of: record, run, termination: termination, exit: exit)
        var reportPath: String?
        do {
            reportPath = try reports.write(ReportStore.Contents(
                bundle: record.bundle, pid: pid, time: Date(), launchedAt: run.launchedAt,
                finalState: run.machine.finalState, termination: termination, exit: exit,
                timeInState: run.stateSince.duration(to: clock.now),
                cpuForeground: run.cpuForeground, cpuBackground: run.cpuBackground,
                memory: run.memory, peakMemory: run.peakMemory, backgroundWakeups: record.backgroundWakeups,
                openBackgroundTasks: run.machine.openTasks.sorted { $0.key < $1.key }.map { "#\($0.key) \($0.value)" },
                keptRunningBy: run.machine.holds.sorted(),
                backgroundTimeRemaining: run.backgroundTimeRemainingAtEnd,
                held: run.held,
                violationCount: run.violationCount, violations: run.violations,
                lastEvents: run.events, storage: storage.usage(of: record.bundle),
                fatalError: diagnostics.fatalError, backtrace: diagnostics.backtrace,
                backtraceUnavailable: diagnostics.unavailable, transfers: transferListing(of: record.bundle.identifier))).path
            configuration.logger.debug("\(record.bundle.name): ended (\(exit.description)), report \(reportPath ?? "")")
        } catch {
            publish(HostEvent(time: Date(), event: .warning, detail: "cannot write the report of \(record.bundle.name): \(error)"), run: nil)
        }
        run.lastState = .terminated
        if scheduler.processEnded(for: record.bundle.identifier, termination: termination, shuttingDown: waiters.isShuttingDown) == .forceQuit {
            forceQuit(record)
        }
        updateSampler()
        pressureVictimEnded(record)
        var ended = HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: pid, event: .terminated,
            state: .terminated, termination: termination, report: reportPath)
        ended.fatalError = diagnostics.fatalError
        ended.backtrace = diagnostics.backtrace.map { Array($0.frames.prefix(5).map(\.line)) }
        ended.appFrame = diagnostics.appFrame
        publish(ended, run: run)
        purgeIfPending(record)
        resolveWaiters(for: record)
        resumeShutdownIfDone()
    }

    func publish(_ event: HostEvent, run: AppRun?) {
        if let run {
            run.remember(event)
        }
        observer(event)
    }

    func resolveWaiters(for record: AppRecord) {
        waiters.changed(
            record.id, state: currentState(of: record), settled: record.run?.machine.isSettled ?? true, unsettled: apps.unsettled)
    }

    /// Once every app has ended, a shutdown waiting goes on: the launchpad stops (off the loop,
    /// then `shutDownGoesOn`).
    func resumeShutdownIfDone() {
        guard waiters.awaitsShutdown, !apps.contains(where: { $0.run?.machine.isAlive == true }) else { return }
        if waiters.stopping() { launchpad.shutDown() }
    }

    /// The launchpad has stopped: the host's groups, mounts and stores go, then the instance,
    /// and the shutdowns waiting are over.
    func shutDownGoesOn() {
        environment.remove()
        for line in storage.unmountAll() { publish(HostEvent(time: Date(), event: .warning, detail: line), run: nil) }
        stores.flush()
        // Another host may start on the instance from here.
        instanceLock.release()
        // What the writes just finished tell the loop (a request kept, say) is queued behind
        // this turn: it is said before the host's caller hears that it is over.
        let continuations = waiters.takeShutdowns()
        queue.async { continuations.forEach { $0.resume() } }
    }
}
