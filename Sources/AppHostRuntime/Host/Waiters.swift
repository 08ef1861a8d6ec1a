/// Who waits for what (docs/internals.md, "How the code is laid out"): `wait` commands for an app to reach a state,
/// settles for apps to end their transitions, and the host's shutdown for every app to end. Each
/// is resumed once, by what it waits for or by its timeout, whichever comes first. Touched only on
/// the host's loop.
final class Waiters {
    private struct StateWait {
        let app: AppID
        let state: AppState
        let continuation: CheckedContinuation<Bool, Never>
    }

    private var states: [Int: StateWait] = [:]
    private var settles: [Int: SettleWaiter] = [:]
    private var shutdowns: [CheckedContinuation<Void, Never>] = []
    /// Whether the host's tearing down (after every app ended) has begun and not yet ended.
    private var isStopping = false
    private var next = 0
    /// Set by the host's shutdown: no app launches after it.
    private(set) var isShuttingDown = false

    /// Waits for `app` to be in `state`; returns the number `timedOut(state:)` takes.
    func wait(for app: AppID, state: AppState, _ continuation: CheckedContinuation<Bool, Never>) -> Int {
        next += 1
        states[next] = StateWait(app: app, state: state, continuation: continuation)
        return next
    }

    /// The wait's time is up: it is told no, unless its state came first.
    func timedOut(state number: Int) {
        states.removeValue(forKey: number)?.continuation.resume(returning: false)
    }

    /// Waits for `waiter`'s apps to settle; returns the number `timedOut(settle:)` takes.
    func settle(_ waiter: SettleWaiter) -> Int {
        next += 1
        settles[next] = waiter
        return next
    }

    /// The settle's time is up: it ends (settled or not, as `end` decides), unless it ended first.
    func timedOut(settle number: Int, _ end: (SettleWaiter) -> Void) {
        settles.removeValue(forKey: number).map(end)
    }

    /// Takes in that `record` is now in `state` (and its machine may have settled): resumes the
    /// waits it ends. Each settle follows the apps it still waits for, so that an input costs a
    /// look at one app, not at each of thousands.
    func changed(_ record: AppRecord, state: AppState, unsettled: Set<AppID>) {
        for (number, wait) in states where wait.app == record.id && wait.state == state {
            states[number] = nil
            wait.continuation.resume(returning: true)
        }
        for (number, waiter) in settles where waiter.follow(record) && waiter.recount(unsettled) {
            settles[number] = nil
            waiter.continuation.resume()
        }
    }

    /// The host shuts down: `continuation` is resumed once every app has ended (`shutDown`).
    func shutdown(_ continuation: CheckedContinuation<Void, Never>) {
        isShuttingDown = true
        shutdowns.append(continuation)
    }

    /// Whether a shutdown waits.
    var awaitsShutdown: Bool { !shutdowns.isEmpty }

    /// Every app has ended: whether the host's tearing down is to begin now (not when it has
    /// begun already, for a shutdown before).
    func stopping() -> Bool {
        defer { isStopping = true }
        return !isStopping
    }

    /// The host is torn down: the shutdowns waiting, to resume. A shutdown asked after this
    /// tears it down again (there is nothing left to do).
    func takeShutdowns() -> [CheckedContinuation<Void, Never>] {
        defer {
            shutdowns = []
            isStopping = false
        }
        return shutdowns
    }
}
