#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSystem

/// Measuring for the resource rules (ResourceMonitor decides, with Rules/ResourceRules.swift and
/// Rules/MemoryPressure.swift, and returns what to do): what an app holds at suspension
/// (0xdead10cc), its memory against its limits and the host's budget (jetsam), and its CPU in
/// the background (EXC_RESOURCE). This gathers the measurements and performs the effects, on the
/// supervisor's queue.
///
/// Measuring is event-driven where the kernel allows it (the memory cgroup's OOM eventfd) and
/// otherwise a sample every `resourceSampleInterval`, taken only while some app is running:
/// suspended apps neither allocate nor compute, so a host whose apps are all suspended sleeps.
extension HostLoop {
    /// The app's processes: the members of its groups (children included), else the app itself.
    func processes(of run: AppRun) -> [pid_t] {
        run.process?.processes ?? []
    }

    /// Measures the app's memory now.
    func recordUsage(_ run: AppRun) {
        guard run.machine.isAlive else { return }
        run.measured(memory: MemoryFootprint.of(processes(of: run)))
        // Its CPU time too: an app killed with the init of its PID namespace is never reaped by
        // it, so the init's resource usage at exit does not include the app's.
        account(run, until: run.process.flatMap { ProcFS.cpuTime(pid: $0.pid) })
    }

    // MARK: Shared resources (0xdead10cc)

    /// Ends the app if it holds a lock in an app-group container or has a declared shared
    /// resource open, now that it would be suspended. Returns whether it did.
    func endIfHoldingSharedResources(_ record: AppRecord, _ run: AppRun) -> Bool {
        guard let (held, termination) = resources.heldAtSuspension(by: processes(of: run)) else { return false }
        run.held = held
        handle(record, run, .enforce(termination))
        return true
    }

    // MARK: State changes

    /// Follows the app into its new state (ResourceMonitor keeps its background CPU window and
    /// when it last ran): the memory limit of that state, and whether anything needs measuring.
    func stateChanged(_ record: AppRecord, _ run: AppRun, from previous: AppState) {
        let now = clock.now
        let state = run.lastState
        switch state {
        case .active, .inactive, .background:
            resources.stateChanged(record.id, to: state, cpu: state == .background ? ProcFS.cpuTime(pid: run.process?.pid ?? 0) : nil, now: now)
            applyMemoryLimit(record, run, from: previous)
        case .suspended:
            resources.stateChanged(record.id, to: state, cpu: nil, now: now)
            recordUsage(run)
        default:
            break
        }
        updateSampler()
    }

    /// Holds the app to its new state's limit as ResourceMonitor says: ends it if it already
    /// uses more, else sets its group's and ends it if the group refuses (a measurement reads
    /// each of its processes' memory).
    private func applyMemoryLimit(_ record: AppRecord, _ run: AppRun, from previous: AppState) {
        guard run.machine.isLive, let process = run.process else { return }
        switch resources.limitStep(
            entering: run.lastState, from: previous, inForeground: run.machine.isInForeground, groupLimit: process.memoryGroup?.limit,
            measuredBefore: run.peakMemory > 0) {
        case .keep:
            return
        case .measureLater:
            post(.measure(run.id))
        case .apply(let bytes, let label):
            recordUsage(run)
            switch resources.holdToLimit(bytes: bytes, label: label, memory: run.memory, peak: run.peakMemory) {
            case .end(let termination):
                handle(record, run, .enforce(termination))
            case .setGroupLimit(let bytes):
                guard process.memoryGroup?.setLimit(bytes) == false else { return }
                handle(record, run, .enforce(resources.groupRefused(bytes: bytes, label: label, memory: run.memory, peak: run.peakMemory)))
            }
        }
    }

    // MARK: Memory limits

    /// The app's memory cgroup ran out (the kernel stops it there): end it now.
    func memoryGroupFull(_ record: AppRecord, _ run: AppRun) {
        guard run.machine.isLive, let group = run.process?.memoryGroup else { return }
        recordUsage(run)
        handle(record, run, .enforce(resources.groupFull(
            state: run.machine.state, inForeground: run.machine.isInForeground, groupLimit: group.limit, memory: run.memory, peak: run.peakMemory)))
    }

    /// Runs the sampler while some app runs (`runningApps`); stops it when every app is
    /// suspended or gone.
    func updateSampler() {
        let needed = !apps.running.isEmpty
        guard needed != (timers.instant(of: .sample) != nil) else { return }
        timers.set(.sample, at: resources.nextSample(anyRunning: needed, now: clock.now))
    }

    /// One measurement of every live app (ResourceMonitor says what it means): memory against
    /// its limit where no cgroup holds it, and the host's budget; CPU in the background against
    /// its share.
    func sample() {
        let samples = apps.compactMap { record -> ResourceMonitor.Sample? in
            guard let run = record.run, run.machine.isLive, let process = run.process else { return nil }
            let state = run.machine.state
            if state != .suspended { recordUsage(run) }
            return ResourceMonitor.Sample(
                id: record.id, state: state, inForeground: run.machine.isInForeground, memory: run.memory,
                limitedByGroup: process.memoryGroup != nil, suspending: run.machine.phase == .suspending,
                cpu: state == .background ? ProcFS.cpuTime(pid: process.pid) : nil)
        }
        for effect in resources.sample(samples, now: clock.now) {
            switch effect {
            case .end(let id, let termination):
                guard let run = apps[id].run else { continue }
                handle(apps[id], run, .enforce(termination))
            case .beginPressure(let target, let usage, let cause):
                beginPressure(target: target, usage: usage, cause: cause)
            }
        }
    }

    /// What the memory-pressure rules are told of every live app, each running one measured
    /// first if `measuring` (a suspended app's memory does not change).
    func liveApps(measuring: Bool) -> [ResourceMonitor.LiveApp] {
        apps.compactMap { record -> ResourceMonitor.LiveApp? in
            guard let run = record.run, run.machine.isLive else { return nil }
            if measuring, run.machine.state != .suspended { recordUsage(run) }
            return ResourceMonitor.LiveApp(
                id: record.id, name: record.bundle.name, state: run.machine.state, inForeground: run.machine.isInForeground,
                starting: run.machine.phase == .starting, memory: run.memory, since: run.stateSince)
        }
    }

    // MARK: Memory pressure (jetsam vm-pageshortage)

    /// The apps together over the budget (a sample): memory pressure begins, as ResourceMonitor says.
    func beginPressure(target: UInt64, usage: UInt64, cause: String) {
        performPressure(resources.beginPressure(target: target, usage: usage, cause: cause, now: clock.now, apps: liveApps(measuring: false)))
    }

    /// Does what the beginning of an episode takes, in order, then waits for its grace to end.
    func performPressure(_ effects: [ResourceMonitor.PressureEffect]) {
        guard !effects.isEmpty else { return }
        var disconnected: [String] = []
        for effect in effects {
            switch effect {
            case .disconnectBackgroundScenes:
                disconnected = disconnectBackgroundScenes()
            case .announce(let notice):
                publish(HostEvent(time: Date(), event: .memoryPressure, detail: notice.line(disconnected: disconnected)), run: nil)
            case .warn(let id):
                if let run = apps[id].run { handle(apps[id], run, .memoryWarning) }
            }
        }
        armPressureTimer()
    }

    /// Every scene in the background is disconnected (`sceneDidDisconnect`; its session is
    /// kept), a suspended app being resumed into the background for it. Returns "APP (SESSION,
    /// …)" per app.
    private func disconnectBackgroundScenes() -> [String] {
        apps.compactMap { record -> String? in
            let effects = scenes.disconnectBackgroundScenes(of: sceneFacts(record))
            guard !effects.isEmpty else { return nil }
            for effect in effects { perform(effect, record) }
            return "\(record.bundle.name) (\(effects.compactMap(\.session).joined(separator: ", ")))"
        }
    }

    /// Takes the episode's next step: wait, end the next app, or finish.
    func stepPressure() {
        switch resources.stepPressure(now: clock.now, apps: liveApps(measuring: true)) {
        case nil:
            return
        case .wait:
            armPressureTimer()
        case .end(let id, let termination):
            guard let run = apps[id].run else { return }
            handle(apps[id], run, .enforce(termination))
        case .over(let line):
            publish(HostEvent(time: Date(), event: .memoryPressure, detail: line), run: nil)
        }
    }

    /// The app's run ended (ResourceMonitor forgets when it was suspended): if it was the one
    /// ended to free memory, measure again, and end the next if still over.
    func pressureVictimEnded(_ record: AppRecord) {
        guard resources.appEnded(record.id) else { return }
        post(.pass(.pressure))
    }

    private func armPressureTimer() {
        timers.set(.pressure, at: resources.pressureDeadline)
    }
}
