#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostProtocol
import AppHostSystem

/// What the SDK of a detached application would have told the host, and the test's waits for it.
final class DetachedRecorder: Sendable {
    struct Snapshot {
        var warnings: [String] = []
        var fetchInterval: TimeInterval?
        var terminationReason: String?
        var registered: Set<String> = []
        var launchFinished = false
        var results: [UInt64: String] = [:]
        var waiters: [UInt64: CheckedContinuation<String?, Never>] = [:]
        /// Work whose wait timed out before it began waiting.
        var timedOut: Set<UInt64> = []
        /// Background tasks begun and not ended, and who waits for there to be none.
        var openTasks = 0
        var idleWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextIdleWaiter: UInt64 = 0
    }

    private let state = Mutex(Snapshot())

    var snapshot: Snapshot { state.withLock { $0 } }

    func finishLaunching() {
        state.withLock { $0.launchFinished = true }
    }

    /// One message the SDK sent.
    func record(_ message: AppMessage) {
        var resume: (CheckedContinuation<String?, Never>, String)?
        var idle: [CheckedContinuation<Bool, Never>] = []
        state.withLock { state in
            switch message {
            case .taskBegan:
                state.openTasks += 1
            case .taskEnded:
                state.openTasks -= 1
                if state.openTasks == 0 {
                    idle = Array(state.idleWaiters.values)
                    state.idleWaiters = [:]
                }
            case .warning(let text):
                state.warnings.append(text)
            case .fetchInterval(let interval):
                state.fetchInterval = interval ?? Application.backgroundFetchIntervalNever
            case .registerTask(let identifier):
                let (inserted, _) = state.registered.insert(identifier)
                if !inserted {
                    state.terminationReason = state.terminationReason
                        ?? "registered a launch handler for \(identifier) twice; the host terminates the app for it (bg-task-registration)"
                } else if state.launchFinished {
                    state.terminationReason = state.terminationReason
                        ?? "registered a launch handler for \(identifier) after application(_:didFinishLaunchingWithOptions:) returned; the host terminates the app for it (bg-task-registration)"
                }
            case .workCompleted(let work, let result):
                if let waiter = state.waiters.removeValue(forKey: work) { resume = (waiter, result) } else { state.results[work] = result }
            default:
                break
            }
        }
        if let (waiter, result) = resume { waiter.resume(returning: result) }
        idle.forEach { $0.resume(returning: true) }
    }

    /// Whether the app had no background task open by `timeout`.
    func tasksEnded(within timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> UInt64? in
                if state.openTasks == 0 { return nil }
                defer { state.nextIdleWaiter += 1 }
                state.idleWaiters[state.nextIdleWaiter] = continuation
                return state.nextIdleWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: timeout)
                state.withLock { $0.idleWaiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }

    /// The result of a piece of work, once its completion is called; throws after `timeout`.
    func result(of work: UInt64, timeout: Duration, awaiting what: String) async throws(DetachedApplicationError) -> String {
        let timer = Task {
            try await Task.sleep(for: timeout)
            let waiter = state.withLock { state in
                let waiter = state.waiters.removeValue(forKey: work)
                if waiter == nil { state.timedOut.insert(work) }
                return waiter
            }
            waiter?.resume(returning: nil)
        }
        defer { timer.cancel() }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let done = state.withLock { state -> String?? in
                if let result = state.results.removeValue(forKey: work) { return .some(result) }
                if state.timedOut.remove(work) != nil { return .some(nil) }
                state.waiters[work] = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
        guard let result else {
            throw DetachedApplicationError("\(what) was not called within \(timeout)", code: .timeout)
        }
        return result
    }
}

/// A directory of its own under the temporary directory, removed with everything in it when
/// released.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() {
        var template = Array((NSTemporaryDirectory() + "apphost-detached-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        url = made.map { URL(fileURLWithPath: String(cString: $0), isDirectory: true) }
            ?? URL(fileURLWithPath: NSTemporaryDirectory() + "apphost-detached-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
