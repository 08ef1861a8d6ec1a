public import Foundation
import AppHostProtocol

// DetachedApplication's background modes: a fetch, a remote notification, BGTaskScheduler tasks,
// delivered to the delegate as the host would, with their completions awaited.
extension DetachedApplication {

    /// `application(_:performFetchWithCompletionHandler:)`, in the current state; returns the
    /// result the app passes to the completion handler. Throws if it is not called within
    /// `timeout` (the host would end the app with 0x2182bad4 after its 30 s).
    public func performFetch(timeout: Duration = .seconds(30)) async throws -> Application.BackgroundFetchResult {
        let work = takeWork()
        let completion = fetchCompletion(work: work, notification: false, link: application.link)
        drive(state) { $0.application(application, performFetchWithCompletionHandler: completion) }
        return try fetchResult(await recorder.result(of: work, timeout: timeout, awaiting: "the completion handler of application(_:performFetchWithCompletionHandler:)"))
    }

    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` with `userInfo`,
    /// in the current state; returns the result the app passes to the completion handler, or
    /// throws if it is not called within `timeout`.
    public func receiveRemoteNotification(
        _ userInfo: [AnyHashable: Any], timeout: Duration = .seconds(30)
    ) async throws -> Application.BackgroundFetchResult {
        let work = takeWork()
        let completion = fetchCompletion(work: work, notification: true, link: application.link)
        drive(state) { $0.application(application, didReceiveRemoteNotification: userInfo, fetchCompletionHandler: completion) }
        return try fetchResult(await recorder.result(
            of: work, timeout: timeout, awaiting: "the completion handler of application(_:didReceiveRemoteNotification:fetchCompletionHandler:)"))
    }

    /// Starts the BGTaskScheduler task `identifier`, due or not, as the host's `run-task` does:
    /// the launch handler registered for it runs on its queue with a `BGProcessingTask` if a
    /// processing request for it is pending, else a `BGAppRefreshTask` if the app has the
    /// `fetch` mode, else a `BGProcessingTask`. Throws if no launch handler is registered.
    public func startTask(_ identifier: String) throws -> BGTask {
        let pending = application.scheduler.pendingWireRequests().first { $0.identifier == identifier }
        let modes = application.link.configuration.backgroundTasks?.modes ?? []
        let kind: WireBackgroundEvent.Kind = switch pending?.kind {
        case .processing: .processing
        case .appRefresh: .appRefresh
        case nil: modes.contains("fetch") ? .appRefresh : .processing
        }
        let event = WireBackgroundEvent(work: takeWork(), kind: kind, taskIdentifier: identifier)
        guard let task = application.scheduler.launch(event, for: application) else {
            let registered = registeredTaskIdentifiers
            throw DetachedApplicationError(
                "no launch handler is registered for \(identifier) (registered: \(registered.isEmpty ? "none" : registered.joined(separator: ", "))); "
                    + "register it with BGTaskScheduler.shared.register(forTaskWithIdentifier:using:launchHandler:) before "
                    + "application(_:didFinishLaunchingWithOptions:) returns", code: .noLaunchHandler)
        }
        return task
    }

    /// Ends a running task early, as the host does when its time is up: its `expirationHandler`
    /// runs on its queue.
    public func expire(_ task: BGTask) {
        application.scheduler.expire(work: task.work)
    }

    /// Waits until the task calls `setTaskCompleted(success:)` and returns `success`; throws if
    /// it has not within `timeout`.
    public func completion(of task: BGTask, timeout: Duration = .seconds(30)) async throws -> Bool {
        try await recorder.result(of: task.work, timeout: timeout, awaiting: "setTaskCompleted(success:) of task \(task.identifier)") == "success"
    }

    /// `startTask(identifier)`, then `completion(of:timeout:)`.
    @discardableResult
    public func runTask(_ identifier: String, timeout: Duration = .seconds(30)) async throws -> Bool {
        try await completion(of: try startTask(identifier), timeout: timeout)
    }

    /// The identifiers the app registered launch handlers for, sorted.
    public var registeredTaskIdentifiers: [String] { application.scheduler.registeredIdentifiers.sorted() }

    /// The app's pending BGTaskScheduler requests.
    public var pendingTaskRequests: [BGTaskRequest] { application.scheduler.pendingWireRequests().map(BGTaskRequest.from) }

    /// What the app last passed to `setMinimumBackgroundFetchInterval(_:)`, nil if it never did
    /// (`Application.backgroundFetchIntervalNever` for never).
    public var minimumBackgroundFetchInterval: TimeInterval? { recorder.snapshot.fetchInterval }
}
