import Dispatch
import HeapModule

/// One deadline the host keeps: what is due when it comes.
enum HostDeadline: Hashable, Sendable {
    /// An app's life-cycle machine's next deadline (a watchdog, background time, a grace…).
    case machine(RunID)
    /// The resource sampler's next measurement, while some app runs.
    case sample
    /// The end of a memory-pressure episode's grace.
    case pressure
    /// The next BGTaskScheduler request or fetch that becomes due.
    case scheduler
    /// The next position of a replayed route.
    case route
    /// The next pending user notification that becomes due.
    case notifications
    /// The earliest begin date of a background transfer waiting for it.
    case transfers
    /// Work to run later (`after`): a command's timeout, a suspension looked at again, a cgroup
    /// the kernel still holds removed again.
    case work(Int)
}

/// The host's one timer (docs/internals.md, "How the code is laid out"): every deadline of every subsystem and of every
/// app's machine, kept in one heap; the Dispatch timer is armed for the earliest. Nothing else in
/// the host waits for a time.
///
/// A deadline moved or cleared stays in the heap until its time and is skipped then (`take`
/// compares it with the one set now), so a watchdog set and cleared at every callback costs a
/// push, not a search. The heap is rebuilt from the deadlines set when it holds many more
/// entries than they are. The timer is re-armed only for a deadline sooner than it is set for:
/// one set for a deadline that has gone fires once, finds nothing, and is set for what remains;
/// a host with no deadline at all (every app suspended) is not woken.
final class HostTimers: @unchecked Sendable {
    private struct Entry: Comparable {
        let instant: HostInstant
        let deadline: HostDeadline
        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.instant < rhs.instant }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.instant == rhs.instant && lhs.deadline == rhs.deadline }
    }

    private var instants: [HostDeadline: HostInstant] = [:]
    /// The work of each `.work` deadline, and the number of the next.
    private var work: [Int: () -> Void] = [:]
    private var nextWork = 0
    private var heap = Heap<Entry>()
    /// What the Dispatch timer is set for; nil: nothing.
    private var armed: HostInstant?
    private let timer: any DispatchSourceTimer
    private let clock: any HostClock
    private let queue: DispatchQueue
    private static let onQueue = DispatchSpecificKey<Void>()

    /// Used only on `queue`, where the timer fires (hence unchecked); `after` may be called
    /// from elsewhere (a process released off the loop), and goes there first.
    init(queue: DispatchQueue, clock: any HostClock) {
        self.clock = clock
        self.queue = queue
        queue.setSpecific(key: Self.onQueue, value: ())
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    deinit { timer.cancel() }

    /// What runs when the timer goes off: `route` takes what is due and sends each where it
    /// belongs; once the owner is gone (`route` returns false), work still due runs by itself
    /// (a cgroup a released host's process left is still removed).
    func onFire(_ route: @escaping @Sendable () -> Bool) {
        timer.setEventHandler { [weak self] in
            guard !route(), let self else { return }
            for case .work(let number) in take(now: clock.now) { run(number) }
        }
    }

    /// Runs `work` on the queue once `delay` has passed (by `take`'s caller, through `run`).
    /// The timers are their owner's: `work` holds its owner weakly, or the owner lives until
    /// the work is done; it may hold the timers themselves, which then live until it has run.
    func after(_ delay: Duration, _ work: @escaping () -> Void) {
        guard DispatchQueue.getSpecific(key: Self.onQueue) != nil else {
            nonisolated(unsafe) let work = work
            queue.async { self.after(delay, work) }
            return
        }
        let number = nextWork
        nextWork &+= 1
        self.work[number] = work
        set(.work(number), at: clock.now + delay)
    }

    /// Runs the work of a `.work` deadline that `take` returned.
    func run(_ number: Int) {
        work.removeValue(forKey: number)?()
    }

    /// Sets `deadline` for `instant`, or clears it (nil).
    func set(_ deadline: HostDeadline, at instant: HostInstant?) {
        guard instants[deadline] != instant else { return }
        instants[deadline] = instant
        guard let instant else { return }
        heap.insert(Entry(instant: instant, deadline: deadline))
        if heap.count > 2 * instants.count + 1024 { heap = Heap(instants.map { Entry(instant: $0.value, deadline: $0.key) }) }
        arm()
    }

    /// When `deadline` is set for, if it is.
    func instant(of deadline: HostDeadline) -> HostInstant? { instants[deadline] }

    /// The deadlines due at `now`, earliest first; each is cleared. The timer is armed for the
    /// next.
    func take(now: HostInstant) -> [HostDeadline] {
        var due: [HostDeadline] = []
        while let top = heap.min, top.instant <= now {
            heap.removeMin()
            guard instants[top.deadline] == top.instant else { continue }
            instants[top.deadline] = nil
            due.append(top.deadline)
        }
        armed = nil
        arm()
        return due
    }

    /// How many deadlines are set (for tests and `doctor`-style figures).
    var count: Int { instants.count }

    private func arm() {
        // Skips what was moved or cleared, so the timer is not armed for it.
        while let top = heap.min, instants[top.deadline] != top.instant { heap.removeMin() }
        guard let next = heap.min?.instant, armed.map({ next < $0 }) ?? true else { return }
        armed = next
        let delay = max(0, clock.now.duration(to: next).nanoseconds)
        // A quarter of the delay, between 1 µs and 100 µs: a look 50 µs on (a freeze confirmed)
        // is not made three times as late, and a watchdog's seconds still let the kernel batch.
        let leeway = min(100_000, max(1_000, delay / 4))
        timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .nanoseconds(Int(leeway)))
    }
}

