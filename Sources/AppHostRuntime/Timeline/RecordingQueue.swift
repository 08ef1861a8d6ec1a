import Dispatch
import Synchronization

/// Where a recorder (the journal, the trace) does its work, off the supervisor's queue and in
/// order, in bounded memory: at most `maximumPending` pieces of work wait. Past that — a host
/// that makes events faster than the disk takes them, an app flooding its log — work is dropped
/// and counted, and the next piece that runs is told how many were, to say so in the record.
final class RecordingQueue: Sendable {
    static let maximumPending = 100_000

    private let queue: DispatchQueue
    private let pending = Atomic(0)
    private let dropped = Atomic(0)

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Queues `work`, which receives how many pieces were dropped since the last one ran.
    func async(_ work: @escaping @Sendable (_ droppedBefore: Int) -> Void) {
        guard pending.add(1, ordering: .relaxed).newValue <= Self.maximumPending else {
            pending.subtract(1, ordering: .relaxed)
            dropped.add(1, ordering: .relaxed)
            return
        }
        queue.async { [self] in
            work(dropped.exchange(0, ordering: .relaxed))
            pending.subtract(1, ordering: .relaxed)
        }
    }

    /// Runs `work` once everything queued before it has run.
    func sync<Result>(_ work: () -> Result) -> Result {
        queue.sync(execute: work)
    }
}
