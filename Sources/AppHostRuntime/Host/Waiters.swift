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
    private var settles: [Int: Settle] = [:]
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

    /// Waits until the apps `ids` (nil: every app) have settled, as `unsettled` (AppTable's apps
    /// between steps) says: `continuation` is resumed then, at once if they have. Returns the
    /// number `timedOut(settle:)` takes, or nil if it was resumed already.
    func settle(_ ids: [AppID]?, unsettled: Set<AppID>, _ continuation: CheckedContinuation<Void, any Error>) -> Int? {
        let settle = Settle(covered: ids.map(Set.init), continuation: continuation)
        guard !settle.recount(unsettled) else {
            continuation.resume()
            return nil
        }
        next += 1
        settles[next] = settle
        return next
    }

    /// The settle's time is up, unless it ended first: resumed if its apps have settled after all
    /// (as `unsettled` says now), else told why with `failure`, given the apps still unsettled.
    func timedOut(settle number: Int, unsettled: Set<AppID>, failure: ([AppID]) -> any Error) {
        guard let settle = settles.removeValue(forKey: number) else { return }
        if settle.recount(unsettled) {
            settle.continuation.resume()
        } else {
            settle.continuation.resume(throwing: failure(settle.waitingFor.sorted()))
        }
    }

    /// Takes in that the app `id` is now in `state`, and settled or not: resumes the waits it
    /// ends. Each settle follows the apps it still waits for, so that an input costs a look at
    /// one app, not at each of thousands; `unsettled` (AppTable's) is looked at once one seems
    /// to have settled.
    func changed(_ id: AppID, state: AppState, settled: Bool, unsettled: Set<AppID>) {
        for (number, wait) in states where wait.app == id && wait.state == state {
            states[number] = nil
            wait.continuation.resume(returning: true)
        }
        for (number, settle) in settles where settle.follow(id, settled: settled) && settle.recount(unsettled) {
            settles[number] = nil
            settle.continuation.resume()
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

/// A `settle` waiting for its apps.
private final class Settle {
    let continuation: CheckedContinuation<Void, any Error>
    /// The apps waited for (nil: every app, with no set of thousands to build for each
    /// command), and those of them not settled when last looked at.
    private let covered: Set<AppID>?
    private(set) var waitingFor: Set<AppID> = []

    init(covered: Set<AppID>?, continuation: CheckedContinuation<Void, any Error>) {
        self.covered = covered
        self.continuation = continuation
    }

    /// Takes in that the app `id` settled or not; returns whether every app now seems settled.
    func follow(_ id: AppID, settled: Bool) -> Bool {
        if let covered, !covered.contains(id) { return waitingFor.isEmpty }
        if settled { waitingFor.remove(id) } else { waitingFor.insert(id) }
        return waitingFor.isEmpty
    }

    /// Looks again, at `unsettled` (the apps between steps): returns whether every app it waits
    /// for has settled.
    func recount(_ unsettled: Set<AppID>) -> Bool {
        waitingFor = covered.map { unsettled.intersection($0) } ?? unsettled
        return waitingFor.isEmpty
    }
}
