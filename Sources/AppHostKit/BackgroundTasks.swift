#if canImport(Glibc)
import Glibc
#endif
public import Foundation
public import Dispatch
import Synchronization
import AppHostProtocol

// BackgroundTasks, as Apple's framework of that name: an app registers a launch handler per task
// identifier while it launches, submits requests, and the host runs each request's task when it
// is due and its conditions hold (docs/background-modes.md, "Background modes").

/// A request to run a task later; use `BGAppRefreshTaskRequest` or `BGProcessingTaskRequest`.
public class BGTaskRequest: CustomStringConvertible {
    /// One of Info.plist's `BGTaskSchedulerPermittedIdentifiers`.
    public let identifier: String
    /// The earliest the task may run; nil: as soon as the host sees fit. A lower bound only.
    public var earliestBeginDate: Date?

    init(identifier: String) { self.identifier = identifier }

    var wire: WireTaskRequest {
        WireTaskRequest(identifier: identifier, kind: .appRefresh, earliestBeginDate: earliestBeginDate?.timeIntervalSince1970)
    }

    static func from(_ wire: WireTaskRequest) -> BGTaskRequest {
        let request: BGTaskRequest
        switch wire.kind {
        case .appRefresh:
            request = BGAppRefreshTaskRequest(identifier: wire.identifier)
        case .processing:
            let processing = BGProcessingTaskRequest(identifier: wire.identifier)
            processing.requiresNetworkConnectivity = wire.requiresNetworkConnectivity
            processing.requiresExternalPower = wire.requiresExternalPower
            request = processing
        }
        request.earliestBeginDate = wire.earliestBeginDate.map(Date.init(timeIntervalSince1970:))
        return request
    }

    public var description: String {
        "\(type(of: self))(identifier: \(identifier), earliestBeginDate: \(earliestBeginDate.map { "\($0)" } ?? "nil"))"
    }
}

/// A short refresh of the app's content: 30 s by default. Needs `fetch` in `UIBackgroundModes`;
/// at most one is pending per app.
public final class BGAppRefreshTaskRequest: BGTaskRequest {
    public override init(identifier: String) { super.init(identifier: identifier) }
}

/// Deferrable maintenance that may take minutes (5 by default). Needs `processing` in
/// `UIBackgroundModes`; at most ten are pending per app.
public final class BGProcessingTaskRequest: BGTaskRequest {
    /// Run only while the host's simulated network is online (`network online`).
    public var requiresNetworkConnectivity = false
    /// Run only while the host's simulated power is plugged in (`power plugged`).
    public var requiresExternalPower = false

    public override init(identifier: String) { super.init(identifier: identifier) }

    override var wire: WireTaskRequest {
        var wire = super.wire
        wire.kind = .processing
        wire.requiresNetworkConnectivity = requiresNetworkConnectivity
        wire.requiresExternalPower = requiresExternalPower
        return wire
    }
}

/// A task the host runs in the background: given to the launch handler registered for its
/// identifier. Call `setTaskCompleted(success:)` when done, before the budget ends; when the host
/// ends the task early (the budget runs out, the user opens the app, a condition stops holding)
/// it calls `expirationHandler` first, and then the app has the policy's grace (5 s) to call
/// `setTaskCompleted(success:)` before it is terminated (0x2182bad4).
public class BGTask: @unchecked Sendable {
    public let identifier: String
    let work: UInt64
    private let link: HostLink
    private let state = Mutex<Expiration>(Expiration())
    /// Runs a block on the task's queue, as its app's: its launch handler, its expiration.
    let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void

    private struct Expiration {
        var handler: (@Sendable () -> Void)?
        var completed = false
        /// The host ended the task early.
        var expired = false
        /// An expiration handler was called (at most one is, once).
        var delivered = false
    }

    init(identifier: String, work: UInt64, link: HostLink, deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.identifier = identifier
        self.work = work
        self.link = link
        self.deliver = deliver
    }

    /// Called when the host ends the task early. Set it first thing in the launch handler: one
    /// set after the task was ended (the launch handler runs on its own queue, so the host may
    /// end the task before it has run) is called then, on the task's queue.
    public var expirationHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.handler } }
        set {
            let late = state.withLock { state -> (@Sendable () -> Void)? in
                state.handler = newValue
                guard state.expired, !state.completed, !state.delivered, let newValue else { return nil }
                state.delivered = true
                return newValue
            }
            if let late { deliver(late) }
        }
    }

    /// Tells the host the task is done; the app is suspended once no other work holds it.
    /// A second call logs a warning and is otherwise ignored.
    public func setTaskCompleted(success: Bool) {
        let first = state.withLock { state in
            defer { state.completed = true }
            return !state.completed
        }
        guard first else {
            link.warn("setTaskCompleted(success:) called twice for task \(identifier); ignoring the second call")
            return
        }
        link.send(.workCompleted(id: work, result: success ? "success" : "failure"))
    }

    var isCompleted: Bool { state.withLock { $0.completed } }

    /// Calls the expiration handler, or keeps the expiration for one set later.
    func expire() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.completed, !state.expired else { return nil }
            state.expired = true
            guard let handler = state.handler else { return nil }
            state.delivered = true
            return handler
        }
        handler?()
    }
}

/// The task of a `BGAppRefreshTaskRequest`.
public final class BGAppRefreshTask: BGTask, @unchecked Sendable {}

/// The task of a `BGProcessingTaskRequest`.
public final class BGProcessingTask: BGTask, @unchecked Sendable {}

/// Registers launch handlers and submits task requests, as BackgroundTasks' class of that name.
public final class BGTaskScheduler: Sendable {
    /// The app's scheduler: `Application.shared`'s.
    public static var shared: BGTaskScheduler { Application.shared.scheduler }

    /// Why `submit(_:)` refused a request. Codes as BackgroundTasks': unavailable 1,
    /// tooManyPendingTaskRequests 2, notPermitted 3. Catch one with
    /// `catch BGTaskScheduler.Error.notPermitted`.
    public struct Error: Swift.Error, CustomStringConvertible, Equatable {
        public enum Code: Int, Sendable {
            /// Background app refresh is off on this host (`apphost launch --no-background-app-refresh`).
            case unavailable = 1
            /// One refresh request, or ten processing requests, are already pending.
            case tooManyPendingTaskRequests = 2
            /// The identifier is not in `BGTaskSchedulerPermittedIdentifiers`, or the app lacks
            /// the background mode the request needs (`fetch` or `processing`).
            case notPermitted = 3

            /// Lets `catch BGTaskScheduler.Error.notPermitted` match a thrown error.
            public static func ~= (code: Code, error: any Swift.Error) -> Bool {
                (error as? BGTaskScheduler.Error)?.code == code
            }
        }

        public static let unavailable = Code.unavailable
        public static let tooManyPendingTaskRequests = Code.tooManyPendingTaskRequests
        public static let notPermitted = Code.notPermitted

        public let code: Code
        /// One line saying what was refused and why.
        public let message: String

        public var description: String { "BGTaskScheduler.Error(\(code)): \(message)" }
        /// The code's raw value, as the bridged NSError's `errorCode`.
        public var errorCode: Int { code.rawValue }
        /// The bridged NSError's domain.
        public static var errorDomain: String { "BGTaskSchedulerErrorDomain" }
    }

    /// `handler` is the app's, as Apple's SDK takes it: not `@Sendable` (a delegate's closure
    /// calls its own methods, as Apple's sample does). It runs on `queue` only, one task at a time
    /// per registration, as on iOS: hence unchecked.
    private struct Registration: @unchecked Sendable {
        var queue: DispatchQueue?
        var handler: (BGTask) -> Void
    }

    private struct State {
        var registrations: [String: Registration] = [:]
        var pending: [WireTaskRequest] = []
        var pendingLoaded = false
    }

    private let state = Mutex(State())
    private let link: HostLink
    /// Set once `application(_:didFinishLaunchingWithOptions:)` has returned: the end of the
    /// window for registering launch handlers.
    let launchFinished = Atomic<Bool>(false)

    init(link: HostLink) { self.link = link }

    /// Registers the code that runs a task. Call it for every identifier before
    /// `application(_:didFinishLaunchingWithOptions:)` returns: a later registration, or a second
    /// one for the same identifier, terminates the app. Returns false, with a warning, for an
    /// identifier missing from `BGTaskSchedulerPermittedIdentifiers`. The handler runs on `queue`,
    /// or on a background queue when it is nil.
    @discardableResult
    public func register(
        forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
        launchHandler: @escaping (BGTask) -> Void
    ) -> Bool {
        let permitted = link.configuration.backgroundTasks?.permittedIdentifiers ?? []
        guard permitted.contains(identifier) else {
            link.warn(
                "register(forTaskWithIdentifier:) refused \(identifier): it is not in BGTaskSchedulerPermittedIdentifiers (\(permitted.joined(separator: ", ")))")
            return false
        }
        let first = state.withLock { state -> Bool in
            guard state.registrations[identifier] == nil else { return false }
            state.registrations[identifier] = Registration(queue: queue, handler: launchHandler)
            return true
        }
        let late = launchFinished.load(ordering: .acquiring)
        link.send(.registerTask(identifier))
        if !first || late {
            // Outside a host the test is told (DetachedApplication.terminationReason) and the
            // call fails; it must not hang the test.
            if link.isDetached { return false }
            // The host terminates the app for this, as iOS raises an exception; nothing after
            // this call may run in the meantime.
            while true { pause() }
        }
        return true
    }

    /// Submits a request; the host runs its task once it is due and its conditions hold. A
    /// request with the identifier of a pending one replaces it. Throws `BGTaskScheduler.Error`.
    public func submit(_ taskRequest: BGTaskRequest) throws {
        let request = taskRequest.wire
        let tasks = link.configuration.backgroundTasks
        let modes = tasks?.modes ?? []
        let permitted = tasks?.permittedIdentifiers ?? []
        guard permitted.contains(request.identifier) else {
            throw Error(code: .notPermitted, message: "\(request.identifier) is not in BGTaskSchedulerPermittedIdentifiers")
        }
        let mode = request.kind == .appRefresh ? "fetch" : "processing"
        guard modes.contains(mode) else {
            throw Error(code: .notPermitted, message: "\(type(of: taskRequest)) needs \(mode) in UIBackgroundModes")
        }
        guard tasks?.available ?? false else {
            throw Error(code: .unavailable, message: "background app refresh is off on this host")
        }
        let limit = request.kind == .appRefresh ? tasks?.maximumPendingRefresh ?? 1 : tasks?.maximumPendingProcessing ?? 10
        try state.withLock { state throws(Error) in
            loadPending(&state)
            let others = state.pending.filter { $0.identifier != request.identifier }
            guard others.filter({ $0.kind == request.kind }).count < limit else {
                throw Error(
                    code: .tooManyPendingTaskRequests,
                    message: "\(limit) \(request.kind == .appRefresh ? "refresh" : "processing") request\(limit == 1 ? " is" : "s are") already pending")
            }
            state.pending = others + [request]
        }
        link.send(.submitTask(request))
    }

    /// Cancels the pending request with this identifier, if any.
    public func cancel(taskRequestWithIdentifier identifier: String) {
        state.withLock { state in
            loadPending(&state)
            state.pending.removeAll { $0.identifier == identifier }
        }
        link.send(.cancelTask(identifier))
    }

    /// Cancels every pending request of the app.
    public func cancelAllTaskRequests() {
        state.withLock { state in
            loadPending(&state)
            state.pending = []
        }
        link.send(.cancelTask(nil))
    }

    /// The app's pending requests, including those submitted by earlier launches.
    public func getPendingTaskRequests(completionHandler: @escaping @Sendable ([BGTaskRequest]) -> Void) {
        let pending = pendingWireRequests()
        DispatchQueue.global().async { completionHandler(pending.map(BGTaskRequest.from)) }
    }

    /// The app's pending requests, including those submitted by earlier launches.
    public func pendingTaskRequests() async -> [BGTaskRequest] {
        pendingWireRequests().map(BGTaskRequest.from)
    }

    func pendingWireRequests() -> [WireTaskRequest] {
        state.withLock { state in
            loadPending(&state)
            return state.pending
        }
    }

    private func loadPending(_ state: inout State) {
        guard !state.pendingLoaded else { return }
        state.pendingLoaded = true
        state.pending = link.configuration.backgroundTasks?.pending ?? []
    }

    /// The identifiers with a launch handler, in no order.
    var registeredIdentifiers: [String] { state.withLock { Array($0.registrations.keys) } }

    /// Runs the launch handler of the event's task on its queue, as `application`'s (so that
    /// `Application.shared` there is the detached application that runs it). Nil if none is
    /// registered.
    func launch(_ event: WireBackgroundEvent, for application: Application) -> BGTask? {
        guard let identifier = event.taskIdentifier else { return nil }
        let registration = state.withLock { state -> Registration? in
            loadPending(&state)
            state.pending.removeAll { $0.identifier == identifier }
            return state.registrations[identifier]
        }
        guard let registration else { return nil }
        let queue = registration.queue ?? DispatchQueue.global()
        let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void = { block in
            queue.async { Detached.$driving.withValue(application) { block() } }
        }
        let task: BGTask = event.kind == .processing
            ? BGProcessingTask(identifier: identifier, work: event.work, link: link, deliver: deliver)
            : BGAppRefreshTask(identifier: identifier, work: event.work, link: link, deliver: deliver)
        running.withLock { running in
            running = running.filter { !$0.value.isCompleted }
            running[event.work] = task
        }
        deliver { registration.handler(task) }
        return task
    }

    /// Runs the expiration handler of a running task, on its queue.
    func expire(work: UInt64) {
        guard let task = running.withLock({ $0[work] }) else { return }
        task.deliver { task.expire() }
    }

    private let running = Mutex<[UInt64: BGTask]>([:])
}
