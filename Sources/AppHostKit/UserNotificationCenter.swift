import Foundation
import Synchronization

/// The app's notification center, as `UNUserNotificationCenter.current()`: answers authorization
/// honestly (not determined, then denied), keeps categories and pending requests, and shows
/// nothing (UserNotifications.swift). Safe from any thread; completion handlers run on a global
/// queue, as on iOS.
public final class UNUserNotificationCenter: @unchecked Sendable {
    private struct State {
        var asked = false
        var categories: Set<UNNotificationCategory> = []
        var pending: [UNNotificationRequest] = []
    }

    private static let shared = UNUserNotificationCenter()
    private let state = Mutex(State())
    private let delegateLock = NSLock()
    /// Guarded by `delegateLock` (the class is unchecked Sendable for it).
    private weak var storedDelegate: (any UNUserNotificationCenterDelegate)?

    private init() {}

    /// The app's center.
    public static func current() -> UNUserNotificationCenter { shared }

    /// Kept, and never called: apphost delivers no notifications.
    public var delegate: (any UNUserNotificationCenterDelegate)? {
        get { delegateLock.withLock { storedDelegate } }
        set { delegateLock.withLock { storedDelegate = newValue } }
    }

    private var status: UNAuthorizationStatus { state.withLock { $0.asked } ? .denied : .notDetermined }

    /// Answers `granted` false, as a user who declined would: apphost shows no notifications. A
    /// warning event says so.
    public func requestAuthorization(
        options: UNAuthorizationOptions = [], completionHandler: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        state.withLock { $0.asked = true }
        Application.shared.link.warn("UNUserNotificationCenter.requestAuthorization: denied, as apphost shows no user notifications")
        DispatchQueue.global().async { completionHandler(false, nil) }
    }

    /// `requestAuthorization(options:completionHandler:)`: false.
    public func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool {
        await withCheckedContinuation { continuation in
            requestAuthorization(options: options) { granted, _ in continuation.resume(returning: granted) }
        }
    }

    /// The settings: `.notDetermined` until the app asks for authorization, then `.denied`.
    public func getNotificationSettings(completionHandler: @escaping @Sendable (UNNotificationSettings) -> Void) {
        let settings = UNNotificationSettings(authorizationStatus: status)
        DispatchQueue.global().async { completionHandler(settings) }
    }

    /// `getNotificationSettings(completionHandler:)`'s settings.
    public func notificationSettings() async -> UNNotificationSettings {
        UNNotificationSettings(authorizationStatus: status)
    }

    /// Keeps the app's categories.
    public func setNotificationCategories(_ categories: Set<UNNotificationCategory>) {
        state.withLock { $0.categories = categories }
    }

    /// The categories set last.
    public func getNotificationCategories(completionHandler: @escaping @Sendable (Set<UNNotificationCategory>) -> Void) {
        let categories = state.withLock { $0.categories }
        DispatchQueue.global().async { completionHandler(categories) }
    }

    /// Keeps `request` pending (replacing one of its identifier), as iOS does; it is never shown,
    /// which a warning event says. No error: iOS reports none for an app that is not authorized.
    public func add(_ request: UNNotificationRequest, withCompletionHandler completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        state.withLock { state in
            state.pending.removeAll { $0.identifier == request.identifier }
            state.pending.append(request)
        }
        Application.shared.link.warn("UNUserNotificationCenter.add: request \(request.identifier) is kept pending and not shown: apphost shows no user notifications")
        if let completionHandler { DispatchQueue.global().async { completionHandler(nil) } }
    }

    /// `add(_:withCompletionHandler:)`.
    public func add(_ request: UNNotificationRequest) async throws {
        add(request, withCompletionHandler: nil)
    }

    /// The requests added and not removed.
    public func getPendingNotificationRequests(completionHandler: @escaping @Sendable ([UNNotificationRequest]) -> Void) {
        let pending = state.withLock { $0.pending }
        DispatchQueue.global().async { completionHandler(pending) }
    }

    /// `getPendingNotificationRequests(completionHandler:)`'s requests.
    public func pendingNotificationRequests() async -> [UNNotificationRequest] {
        state.withLock { $0.pending }
    }

    public func removePendingNotificationRequests(withIdentifiers identifiers: [String]) {
        state.withLock { $0.pending.removeAll { identifiers.contains($0.identifier) } }
    }

    public func removeAllPendingNotificationRequests() {
        state.withLock { $0.pending.removeAll() }
    }

    /// None are ever delivered.
    public func getDeliveredNotifications(completionHandler: @escaping @Sendable ([UNNotification]) -> Void) {
        DispatchQueue.global().async { completionHandler([]) }
    }

    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {}

    public func removeAllDeliveredNotifications() {}
}
