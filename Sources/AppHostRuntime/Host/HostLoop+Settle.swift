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
        let ids = try queue.sync { try names.map { try $0.map { try app(named: $0).id } } }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { [self] in
                guard let number = waiters.settle(ids, unsettled: apps.unsettled, continuation) else { return }
                // Weakly: the timers are the host's own, and a timeout that held the host would
                // keep a released host (its groups, its instance's cgroup) alive until it fired.
                timers.after(limit) { [weak self] in
                    guard let self else { return }
                    waiters.timedOut(settle: number, unsettled: apps.unsettled) { notSettled($0, within: limit) }
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

    private func notSettled(_ ids: [AppID], within limit: Duration) -> SupervisorError {
        let unsettled = ids.compactMap { id -> String? in
            guard let transition = apps[id].run?.machine.transition else { return nil }
            return "\(apps[id].bundle.name) is still \(transition)"
        }
        return SupervisorError(
            "waited \(limit.formatted) for the apps to settle: \(unsettled.joined(separator: "; "))", code: .notSettled)
    }
}
