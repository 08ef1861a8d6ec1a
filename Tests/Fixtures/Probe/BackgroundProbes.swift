import AppHostKit
import Foundation

// What the Probe does with background modes, from ProbeBehavior:
//   "fetchInterval": S             setMinimumBackgroundFetchInterval(S) in didFinishLaunching
//   "fetchResult": "newData" | "noData" | "failed" | "never"     how performFetch completes
//   "pushResult": likewise, for didReceiveRemoteNotification
//   "completeAfter": S             seconds before completing (fetch, push or task; default 0)
//   "registerTasks": [ID]          register launch handlers (on the main queue) while launching
//   "registerIn": CALLBACK         register them in that callback instead (too late after launch)
//   "registerTwice": true          register the first identifier twice
//   "task": "complete" | "never" | "completeOnExpiration" | "fail"    what a launched task does
//   "submit": [{"identifier": ID, "kind": "refresh" | "processing", "earliestIn": S,
//               "power": true, "network": true}]       submitted in didFinishLaunching
//   "submitIn": CALLBACK           submit in that callback instead
//   "submitInTask": true           a launched task submits the requests again (as apps do)
// Every callback and handler records its name, its applicationState and whether it ran on the
// main thread; completions and expirations record what they did.
extension AppDelegate {
    func backgroundSetup(in callback: String, _ application: Application) {
        if callback == (behavior["registerIn"] as? String ?? "didFinishLaunching") { registerTasks() }
        if callback == (behavior["submitIn"] as? String ?? "didFinishLaunching") { submitRequests() }
        if callback == "didFinishLaunching", let interval = behavior["fetchInterval"] as? Double {
            application.setMinimumBackgroundFetchInterval(interval)
            record("fetchInterval \(interval)")
        }
    }

    func registerTasks() {
        let identifiers = behavior["registerTasks"] as? [String] ?? []
        for identifier in identifiers {
            let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: .main) { [weak self] task in
                MainActor.assumeIsolated { self?.run(task) }
            }
            record("registered \(identifier) \(registered)")
        }
        if behavior["registerTwice"] as? Bool == true, let first = identifiers.first {
            record("registering \(first) again")
            BGTaskScheduler.shared.register(forTaskWithIdentifier: first, using: nil) { _ in }
            record("survived a second registration")
        }
    }

    func submitRequests() {
        for entry in behavior["submit"] as? [[String: Any]] ?? [] {
            let identifier = entry["identifier"] as? String ?? ""
            let request: BGTaskRequest
            if entry["kind"] as? String == "processing" {
                let processing = BGProcessingTaskRequest(identifier: identifier)
                processing.requiresExternalPower = entry["power"] as? Bool ?? false
                processing.requiresNetworkConnectivity = entry["network"] as? Bool ?? false
                request = processing
            } else {
                request = BGAppRefreshTaskRequest(identifier: identifier)
            }
            if let seconds = entry["earliestIn"] as? Double { request.earliestBeginDate = Date(timeIntervalSinceNow: seconds) }
            do {
                try BGTaskScheduler.shared.submit(request)
                record("submitted \(identifier)")
            } catch let error as BGTaskScheduler.Error {
                record("submit \(identifier) error=\(error.code.rawValue)")
            } catch {
                record("submit \(identifier) error=\(error)")
            }
        }
    }

    private func run(_ task: BGTask) {
        let application = Application.shared
        let kind = task is BGProcessingTask ? "processing" : task is BGAppRefreshTask ? "refresh" : "?"
        record("launchHandler \(task.identifier) \(kind) \(application.applicationState) main=\(Thread.isMainThread)")
        let completeOnExpiration = behavior["task"] as? String == "completeOnExpiration"
        // Registered on the main queue, so the handler runs there too.
        task.expirationHandler = { [weak self] in
            MainActor.assumeIsolated {
                self?.record("taskExpiration \(task.identifier) main=\(Thread.isMainThread)")
                if completeOnExpiration {
                    task.setTaskCompleted(success: false)
                    self?.record("completed \(task.identifier) false")
                }
            }
        }
        if behavior["submitInTask"] as? Bool == true { submitRequests() }
        switch behavior["task"] as? String ?? "complete" {
        case "complete", "fail":
            let success = behavior["task"] as? String != "fail"
            complete(after: behavior["completeAfter"] as? Double ?? 0) { [weak self] in
                task.setTaskCompleted(success: success)
                self?.record("completed \(task.identifier) \(success)")
            }
        default:
            break
        }
    }

    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void
    ) {
        step("performFetch", application)
        finish(behavior["fetchResult"] as? String ?? "newData", completionHandler)
    }

    func application(
        _ application: Application, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void
    ) {
        step("didReceiveRemoteNotification", application)
        record("payload \(describe(userInfo))")
        finish(behavior["pushResult"] as? String ?? "newData", completionHandler)
    }

    private func finish(_ outcome: String, _ completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void) {
        let result: Application.BackgroundFetchResult
        switch outcome {
        case "never": return
        case "noData": result = .noData
        case "failed": result = .failed
        default: result = .newData
        }
        complete(after: behavior["completeAfter"] as? Double ?? 0) { [weak self] in
            completionHandler(result)
            self?.record("completion \(outcome)")
        }
    }

    private func complete(after seconds: Double, _ body: @escaping @MainActor () -> Void) {
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { MainActor.assumeIsolated { body() } }
    }

    /// A payload as sorted key=value pairs, nested dictionaries in braces.
    func describe(_ payload: [AnyHashable: Any]) -> String {
        payload.map { key, value in
            let text = (value as? [String: Any]).map { "{" + describe(Dictionary(uniqueKeysWithValues: $0.map { (AnyHashable($0.key), $0.value) })) + "}" }
                ?? "\(value)"
            return "\(key)=\(text)"
        }.sorted().joined(separator: ",")
    }
}
