#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol

/// The resource rules of LIFECYCLE.md: shared resources held at suspension (0xdead10cc), memory
/// limits and the host's memory budget (jetsam), and CPU in the background (EXC_RESOURCE). All of
/// it runs on the supervisor's queue.
///
/// Measuring is event-driven where the kernel allows it (the memory cgroup's OOM eventfd) and
/// otherwise a sample every `resourceSampleInterval`, taken only while some app is running:
/// suspended apps neither allocate nor compute, so a host whose apps are all suspended sleeps.
extension Supervisor {
    /// The app's processes: the members of its groups (children included), else the app itself.
    func processes(of run: AppRun) -> [pid_t] {
        run.process?.processes ?? []
    }

    /// Measures the app's memory now.
    func recordUsage(_ run: AppRun) {
        guard run.machine.isAlive else { return }
        run.memory = MemoryFootprint.of(processes(of: run))
        run.peakMemory = max(run.peakMemory, run.memory)
    }

    // MARK: Shared resources (0xdead10cc)

    /// Ends the app if it holds a lock in an app-group container or has a declared shared
    /// resource open, now that it would be suspended. Returns whether it did.
    func endIfHoldingSharedResources(_ record: AppRecord, _ run: AppRun) -> Bool {
        let held = sharedResources.held(by: processes(of: run))
        guard let first = held.first else { return false }
        run.held = held
        let more = held.count > 1 ? " (and \(held.count - 1) more, listed in the report)" : ""
        handle(record, run, .enforce(Termination(
            kind: .sharedResource, namespace: .runningBoard, code: TerminationCode.sharedResourceHeld.rawValue,
            reason: "held \(first) when it would have been suspended\(more)")))
        return true
    }

    // MARK: State changes

    /// Follows the app into its new state: the memory limit of that state, the background CPU
    /// window, the time it last ran, and whether anything needs measuring.
    func stateChanged(_ record: AppRecord, _ run: AppRun, from previous: AppState) {
        let now = clock.now
        let state = run.lastState
        switch state {
        case .active, .inactive:
            run.backgroundCPU = []
            applyMemoryLimit(record, run, limit: configuration.policy.foregroundMemoryLimit, label: "foreground")
        case .background where previous != .suspended:
            if let pid = run.process?.pid, let total = AppProcessSpawner.cpuTime(pid: pid) { run.backgroundCPU = [(now, total)] }
            applyMemoryLimit(record, run, limit: configuration.policy.backgroundMemoryLimit, label: "background")
        case .background:
            if let pid = run.process?.pid, let total = AppProcessSpawner.cpuTime(pid: pid) { run.backgroundCPU = [(now, total)] }
        case .suspended:
            run.lastRunning = now
            run.backgroundCPU = []
            recordUsage(run)
        default:
            break
        }
        updateSampler()
    }

    /// Holds the app to `limit`: ends it if it already uses more, else sets its memory cgroup.
    private func applyMemoryLimit(_ record: AppRecord, _ run: AppRun, limit: UInt64, label: String) {
        guard run.machine.isLive, run.process != nil else { return }
        recordUsage(run)
        let fits = run.memory <= limit && (run.process?.memoryGroup?.setLimit(limit) ?? true)
        guard !fits else { return }
        handle(record, run, .enforce(Termination(
            kind: .perProcessLimit, namespace: .jetsam, code: nil,
            reason: "used \(run.memory.mebibytes) on entering the \(label), over its \(label) memory limit of \(limit.mebibytes) (peak \(run.peakMemory.mebibytes))")))
    }

    // MARK: Memory limits

    /// Ends the app the moment its memory cgroup runs out (the kernel stops it there).
    func watchMemory(_ record: AppRecord, _ run: AppRun, _ group: MemoryGroup) {
        let source = DispatchSource.makeReadSource(fileDescriptor: group.oomEvents, queue: queue)
        source.setEventHandler { [weak self, weak record, weak run] in
            var count: UInt64 = 0
            _ = read(group.oomEvents, &count, 8)
            guard let self, let record, let run, run.machine.isLive, group.isUnderOOM else { return }
            recordUsage(run)
            let label = [.active, .inactive, .launching].contains(run.machine.state) && run.machine.isInForeground ? "foreground" : "background"
            handle(record, run, .enforce(Termination(
                kind: .perProcessLimit, namespace: .jetsam, code: nil,
                reason: "reached its \(label) memory limit of \(group.limit.mebibytes) (memory cgroup; \(run.memory.mebibytes) resident, peak \(run.peakMemory.mebibytes))")))
        }
        source.setCancelHandler { closeIgnoringErrors(group.oomEvents) }
        source.activate()
        run.process?.memorySource = source
    }

    /// Runs the sampler while some app runs; stops it when every app is suspended or gone.
    func updateSampler() {
        let needed = apps.contains { record in
            guard let run = record.run, run.machine.isLive else { return false }
            return run.machine.state != .suspended
        }
        guard needed != samplerRunning else { return }
        samplerRunning = needed
        let interval = configuration.policy.resourceSampleInterval
        if needed {
            let nanoseconds = Int(interval.nanoseconds)
            sampler.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .nanoseconds(nanoseconds / 10))
        } else {
            sampler.schedule(deadline: .distantFuture)
        }
    }

    /// One measurement of every running app: memory against its limit (where no cgroup holds
    /// it) and the host's budget, CPU in the background against its share.
    func sample() {
        let policy = configuration.policy
        var total: UInt64 = 0
        for record in apps {
            guard let run = record.run, run.machine.isLive, run.process != nil else { continue }
            let state = run.machine.state
            if state != .suspended { recordUsage(run) }
            total += run.memory
            if run.process?.memoryGroup == nil, state != .suspended {
                let background = state == .background || (state == .launching && !run.machine.isInForeground)
                let limit = background ? policy.backgroundMemoryLimit : policy.foregroundMemoryLimit
                if run.memory > limit {
                    handle(record, run, .enforce(Termination(
                        kind: .perProcessLimit, namespace: .jetsam, code: nil,
                        reason: "used \(run.memory.mebibytes), over its \(background ? "background" : "foreground") memory limit of \(limit.mebibytes) (measured every \(policy.resourceSampleInterval.formatted))")))
                    continue
                }
            }
            if state == .background, run.machine.phase != .suspending { checkBackgroundCPU(record, run) }
        }
        if pressure == nil, total > memoryBudget {
            beginPressure(target: memoryBudget, usage: total, cause: "over the memory budget")
        }
    }

    /// Every live app's memory, measured now for running ones (a suspended app's does not change).
    func measureMemory() -> UInt64 {
        var total: UInt64 = 0
        for record in apps {
            guard let run = record.run, run.machine.isLive else { continue }
            if run.machine.state != .suspended { recordUsage(run) }
            total += run.memory
        }
        return total
    }

    // MARK: Memory pressure (jetsam vm-pageshortage)

    /// Warns the running apps, then (after the policy's grace) ends apps until usage fits `target`.
    func beginPressure(target: UInt64, usage: UInt64, cause: String) {
        if var episode = pressure {
            episode.target = min(episode.target, target)
            pressure = episode
            return
        }
        pressure = MemoryPressure(target: target, cause: cause)
        let running = apps.filter { record in
            guard let run = record.run, run.machine.isLive else { return false }
            return run.machine.state != .suspended && run.machine.phase != .starting
        }
        let grace = configuration.policy.memoryWarningGrace
        let warned = running.isEmpty ? "no app is running to warn" : "memory warning to \(running.map(\.bundle.name).joined(separator: ", "))"
        publish(HostEvent(
            time: Date(), event: "memoryPressure",
            detail: "\(cause): the apps use \(usage.mebibytes) (budget \(memoryBudget.mebibytes)); \(warned); "
                + "apps are ended in \(grace.formatted) unless usage falls to \(target.mebibytes)"), run: nil)
        for record in running {
            if let run = record.run { handle(record, run, .memoryWarning) }
        }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(grace.nanoseconds))) { [weak self] in self?.resolvePressure() }
    }

    /// Ends apps one at a time until the rest fit: suspended ones least recently used first,
    /// then those running in the background, the foreground app last; no callback, as jetsam.
    /// After each, it waits for the app's end and measures again.
    private func resolvePressure() {
        guard var episode = pressure, episode.awaiting == nil else { return }
        let usage = measureMemory()
        let candidates = apps.compactMap { record -> (record: AppRecord, run: AppRun, rank: Int, since: HostInstant)? in
            guard let run = record.run, run.machine.isLive else { return nil }
            switch run.machine.state {
            case .suspended: return (record, run, 0, run.lastRunning)
            case .background: return (record, run, 1, run.stateSince)
            default: return (record, run, run.machine.isInForeground ? 2 : 1, run.stateSince)
            }
        }.sorted { ($0.rank, $0.since) < ($1.rank, $1.since) }
        guard usage > episode.target, let victim = candidates.first else {
            pressure = nil
            let outcome = episode.ended.isEmpty ? "relieved" : "ended \(episode.ended.joined(separator: ", "))"
            publish(HostEvent(
                time: Date(), event: "memoryPressure",
                detail: "\(outcome); the apps use \(usage.mebibytes)\(usage > episode.target ? ", still over \(episode.target.mebibytes): no app is left to end" : ", within \(episode.target.mebibytes)")"), run: nil)
            return
        }
        episode.awaiting = victim.record
        episode.ended.append(victim.record.bundle.name)
        pressure = episode
        let position = ["suspended, least recently used first", "running in the background", "in the foreground, the last considered"][victim.rank]
        handle(victim.record, victim.run, .enforce(Termination(
            kind: .pageShortage, namespace: .jetsam, code: nil,
            reason: "ended without a callback to free memory (\(episode.cause)): the apps used \(usage.mebibytes), "
                + "over \(episode.target.mebibytes); it used \(victim.run.memory.mebibytes) (\(position))")))
    }

    /// The app ended to free memory is gone: measure again, and end the next if still over.
    func pressureVictimEnded() {
        pressure?.awaiting = nil
        queue.async { [weak self] in self?.resolvePressure() }
    }

    // MARK: CPU in the background (EXC_RESOURCE)

    /// Ends the app if it used more than the policy's share of a core within the trailing window
    /// of its time in the background.
    private func checkBackgroundCPU(_ record: AppRecord, _ run: AppRun) {
        let policy = configuration.policy
        guard let pid = run.process?.pid, let total = AppProcessSpawner.cpuTime(pid: pid) else { return }
        let now = clock.now
        run.backgroundCPU.append((now, total))
        // The newest sample at or before the window's start is the base.
        let windowStart = now - policy.backgroundCPUWindow
        while run.backgroundCPU.count > 1 && run.backgroundCPU[1].at <= windowStart { run.backgroundCPU.removeFirst() }
        let base = run.backgroundCPU[0]
        let used = total - base.total
        let allowed = policy.backgroundCPUWindow * (policy.backgroundCPULimit / 100)
        guard used > allowed else { return }
        let span = base.at.duration(to: now)
        handle(record, run, .enforce(Termination(
            kind: .cpuResource, namespace: .resource, code: nil,
            reason: String(
                format: "used %.2f s of CPU in %.2f s in the background (%.0f %% of a core); the limit is %.0f %% of a core over %@",
                used.seconds, span.seconds, used.seconds / max(span.seconds, 0.001) * 100, policy.backgroundCPULimit,
                policy.backgroundCPUWindow.formatted))))
    }
}

/// A memory-pressure episode: the apps must come down to `target` bytes.
struct MemoryPressure {
    var target: UInt64
    /// "over the memory budget", "memory-pressure": what started it.
    var cause: String
    /// The apps ended so far, in order.
    var ended: [String] = []
    /// The app last ended, until its process is gone.
    var awaiting: AppRecord?
}
