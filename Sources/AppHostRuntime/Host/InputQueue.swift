/// The inputs for the apps' machines, taken one at a time, in order: an input that arrives while
/// another's actions are being performed (an effect that observed something) waits here, so a
/// machine is never re-entered and never acts on decisions computed before its last change.
/// Touched only on the host's loop.
final class InputQueue {
    typealias Item = (record: AppRecord, run: AppRun, input: LifecycleMachine.Input)

    private var waiting: [Item] = []
    private var isDraining = false

    /// Queues `item`; unless a drain is under way (then it waits its turn there), drains every
    /// waiting input through `step`, and returns true.
    func add(_ item: Item, draining step: (Item) -> Void) -> Bool {
        waiting.append(item)
        guard !isDraining else { return false }
        isDraining = true
        defer { isDraining = false }
        while !waiting.isEmpty { step(waiting.removeFirst()) }
        return true
    }
}
