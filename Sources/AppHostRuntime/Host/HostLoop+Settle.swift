import Foundation
import Dispatch

// Settling: a command that reads or acts on an app's state waits until the app's transition in
// flight (a launch, a move to the background, a suspension, a termination) is over, so that a
// script's commands see what the commands before them did, not a moment in between.

extension HostLoop {
    /// Waits until each named app (nil: every installed app) has settled: no callback running,
    /// and the app active, inactive (interrupted), in the background, suspended, or not running.
    /// An app held in the background by its own work (background tasks, a fetch, a task) has
    /// settled: the host waits for nothing more from it. Throws, naming what each app is in the
    /// middle of, if they have not all settled within `timeout` (default: the policy's launch
    /// timeout, the longest any transition is allowed before a watchdog ends it).
    func settle(_ names: [String]? = nil, timeout: Duration? = nil) async throws {
        let limit = timeout ?? configuration.policy.launchTimeout
        let records = try queue.sync { try names.map { try $0.map { try app(named: $0) } } ?? Array(apps) }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { [self] in
                let waiter = SettleWaiter(
                    records: records, coversEveryApp: names == nil, unsettledApps: apps.unsettled, continuation: continuation)
                guard !waiter.isSettled else {
                    continuation.resume()
                    return
                }
                let number = waiters.settle(waiter)
                // Weakly: the timers are the host's own, and a timeout that held the host would
                // keep a released host (its groups, its instance's cgroup) alive until it fired.
                timers.after(limit) { [weak self] in
                    guard let self else { return }
                    waiters.timedOut(settle: number) { waiter in
                        if waiter.recount(apps.unsettled) {
                            waiter.continuation.resume()
                        } else {
                            waiter.continuation.resume(throwing: notSettled(records, within: limit))
                        }
                    }
                }
            }
        }
    }

    /// Waits, within `settle`'s bound, until the apps `command` concerns have settled
    /// (`HostCommand.settling`). `ps` then shows the apps as they are, settled or not; any other
    /// command fails.
    func settle(before command: HostCommand) async throws {
        let names: [String]?
        switch command.settling {
        case .nothing: return
        case .app(let name): names = [name]
        case .everyApp: names = nil
        }
        do {
            try await settle(names)
        } catch let error as SupervisorError where error.code == .notSettled && command == .ps {
            // The listing shows what each app is in the middle of.
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
    private let covered: Set<AppID>?
    private var unsettled: Set<AppID> = []

    /// `unsettledApps`: the supervisor's (which apps are between steps).
    init(
        records: [AppRecord], coversEveryApp: Bool = false, unsettledApps: Set<AppID>,
        continuation: CheckedContinuation<Void, any Error>
    ) {
        self.records = records
        self.continuation = continuation
        covered = coversEveryApp ? nil : Set(records.map(\.id))
        _ = recount(unsettledApps)
    }

    // Touched only on the supervisor's queue.

    /// Whether every app has settled, as last followed.
    var isSettled: Bool { unsettled.isEmpty }

    /// Takes in that `record`'s machine has changed; returns whether every app now seems settled.
    func follow(_ record: AppRecord) -> Bool {
        let id = record.id
        if let covered, !covered.contains(id) { return isSettled }
        if record.run?.machine.isSettled ?? true { unsettled.remove(id) } else { unsettled.insert(id) }
        return isSettled
    }

    /// Looks again at the apps it waits for (once they all seem settled, and at the deadline):
    /// at each named app, or for every app at the supervisor's `unsettledApps`. Returns whether
    /// they have all settled.
    func recount(_ unsettledApps: Set<AppID>) -> Bool {
        guard covered != nil else {
            unsettled = unsettledApps
            return isSettled
        }
        unsettled = []
        for record in records where !(record.run?.machine.isSettled ?? true) { unsettled.insert(record.id) }
        return isSettled
    }
}
