import Foundation
import Dispatch

// Settling: a command that reads or acts on an app's state waits until the app's transition in
// flight (a launch, a move to the background, a suspension, a termination) is over, so that a
// script's commands see what the commands before them did, not a moment in between.

extension Supervisor {
    /// Waits until each named app (nil: every installed app) has settled: no callback running,
    /// and the app active, inactive (interrupted), in the background, suspended, or not running.
    /// An app held in the background by its own work (background tasks, a fetch, a task) has
    /// settled: the host waits for nothing more from it. Throws, naming what each app is in the
    /// middle of, if they have not all settled within `timeout` (default: the policy's launch
    /// timeout, the longest any transition is allowed before a watchdog ends it).
    public func settle(_ names: [String]? = nil, timeout: Duration? = nil) async throws {
        let limit = timeout ?? configuration.policy.launchTimeout
        let records = try queue.sync { try names.map { try $0.map { try app(named: $0) } } ?? apps }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { [self] in
                let waiter = SettleWaiter(
                    records: records, coversEveryApp: names == nil, unsettledApps: unsettledApps, continuation: continuation)
                guard !waiter.isSettled else {
                    continuation.resume()
                    return
                }
                settleWaiters.append(waiter)
                timers.after(limit) { [self] in
                    guard let index = settleWaiters.firstIndex(where: { $0 === waiter }) else { return }
                    settleWaiters.remove(at: index)
                    if waiter.recount(unsettledApps) {
                        continuation.resume()
                    } else {
                        continuation.resume(throwing: notSettled(records, within: limit))
                    }
                }
            }
        }
    }

    /// Resumes the settle waiters whose apps have all settled; called whenever an app's machine
    /// has taken an input (its events, its end), with that app. Each waiter follows the apps it
    /// still waits for, so that an input costs a look at one app, not at each of thousands.
    func resolveSettleWaiters(changed record: AppRecord) {
        settleWaiters.removeAll { waiter in
            guard waiter.follow(record), waiter.recount(unsettledApps) else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    private func notSettled(_ records: [AppRecord], within limit: Duration) -> SupervisorError {
        let unsettled = records.compactMap { record -> String? in
            guard let run = record.run, let transition = run.machine.transition else { return nil }
            return "\(record.bundle.name) is still \(transition)"
        }
        return SupervisorError(
            "waited \(limit.formatted) for the apps to settle: \(unsettled.joined(separator: "; "))", code: .notSettled)
    }
}

/// A `settle` waiting for its apps.
final class SettleWaiter: @unchecked Sendable {
    let records: [AppRecord]
    let continuation: CheckedContinuation<Void, any Error>
    /// The records waited for (nil: every app, with no set of thousands to build for each
    /// command), and those of them not settled when last looked at.
    private let covered: Set<ObjectIdentifier>?
    private var unsettled: Set<ObjectIdentifier> = []

    /// `unsettledApps`: the supervisor's (which apps are between steps).
    init(
        records: [AppRecord], coversEveryApp: Bool = false, unsettledApps: Set<ObjectIdentifier>,
        continuation: CheckedContinuation<Void, any Error>
    ) {
        self.records = records
        self.continuation = continuation
        covered = coversEveryApp ? nil : Set(records.map(ObjectIdentifier.init))
        _ = recount(unsettledApps)
    }

    // Touched only on the supervisor's queue.

    /// Whether every app has settled, as last followed.
    var isSettled: Bool { unsettled.isEmpty }

    /// Takes in that `record`'s machine has changed; returns whether every app now seems settled.
    func follow(_ record: AppRecord) -> Bool {
        let id = ObjectIdentifier(record)
        if let covered, !covered.contains(id) { return isSettled }
        if record.run?.machine.isSettled ?? true { unsettled.remove(id) } else { unsettled.insert(id) }
        return isSettled
    }

    /// Looks again at the apps it waits for (once they all seem settled, and at the deadline):
    /// at each named app, or for every app at the supervisor's `unsettledApps`. Returns whether
    /// they have all settled.
    func recount(_ unsettledApps: Set<ObjectIdentifier>) -> Bool {
        guard covered != nil else {
            unsettled = unsettledApps
            return isSettled
        }
        unsettled = []
        for record in records where !(record.run?.machine.isSettled ?? true) { unsettled.insert(ObjectIdentifier(record)) }
        return isSettled
    }
}
