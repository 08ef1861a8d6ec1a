import Foundation
import Synchronization
import AppHostProtocol

/// The app's notification center, as `UNUserNotificationCenter.current()`. The host decides
/// (docs/porting.md, "Porting iOS code", UserNotifications): authorization is its setting, which a
/// request waits for when it has none (as iOS's prompt waits for the user); requests are kept and
/// delivered by the host on its scheduler's clock. Safe from any thread; completion handlers run
/// on a global queue and the delegate on the main queue, as on iOS.
public final class UNUserNotificationCenter: @unchecked Sendable {
    private struct State {
        /// The host's last answer (UNAuthorizationStatus's name); nil: not asked yet.
        var status: String?
        /// `requestAuthorization` completions waiting for the host to have a setting.
        var authorizationWaiters: [@Sendable (Bool, (any Error)?) -> Void] = []
        /// `getNotificationSettings` completions waiting for the host's answer.
        var settingsWaiters: [@Sendable (UNNotificationSettings) -> Void] = []
        var categories: Set<UNNotificationCategory> = []
        /// The requests this process added and that have not been removed or delivered to it,
        /// by identifier: what the delegate is handed back (with the content's own userInfo).
        var pending: [String: UNNotificationRequest] = [:]
        var order: [String] = []
        /// The app's notifications in Notification Center as the host last told, newest first.
        var delivered: [WireDeliveredNotification] = []
    }

    private static let shared = UNUserNotificationCenter()
    private let state = Mutex(State())
    private let delegateLock = NSLock()
    /// Guarded by `delegateLock` (the class is unchecked Sendable for it).
    private weak var storedDelegate: (any UNUserNotificationCenterDelegate)?

    private init() {}

    /// The app's center.
    public static func current() -> UNUserNotificationCenter { shared }

    /// Told of notifications presented in the foreground (`willPresent`) and tapped (`didReceive`).
    public var delegate: (any UNUserNotificationCenterDelegate)? {
        get { delegateLock.withLock { storedDelegate } }
        set { delegateLock.withLock { storedDelegate = newValue } }
    }

    // MARK: Authorization

    /// Asks the host: with a setting (`authorize APP notifications granted|denied`) it answers at
    /// once, granted true or false; without one the completion waits until the host sets it.
    public func requestAuthorization(
        options: UNAuthorizationOptions = [], completionHandler: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        state.withLock { $0.authorizationWaiters.append(completionHandler) }
        let link = Application.shared.link
        guard !link.isDetached else {
            // No host to set it, and no user to ask: denied, as a user who declined.
            link.warn("UNUserNotificationCenter.requestAuthorization: a detached application has no host to authorize it: denied")
            return authorizationChanged("denied")
        }
        link.send(.notification(.requestAuthorization))
    }

    /// `requestAuthorization(options:completionHandler:)`: whether the host grants it.
    public func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool {
        await withCheckedContinuation { continuation in
            requestAuthorization(options: options) { granted, _ in continuation.resume(returning: granted) }
        }
    }

    /// The settings, as the host has them: `.notDetermined` until it has a setting for the app.
    public func getNotificationSettings(completionHandler: @escaping @Sendable (UNNotificationSettings) -> Void) {
        let status = state.withLock { state in
            state.settingsWaiters.append(completionHandler)
            return state.status ?? "notDetermined"
        }
        let link = Application.shared.link
        guard !link.isDetached else { return authorizationChanged(status) }
        link.send(.notification(.settings))
    }

    /// `getNotificationSettings(completionHandler:)`'s settings.
    public func notificationSettings() async -> UNNotificationSettings {
        await withCheckedContinuation { continuation in getNotificationSettings { continuation.resume(returning: $0) } }
    }

    /// The host's answer (HostMessage.notification's authorization): settings waiters hear it,
    /// and requests waiting for a setting are answered once there is one.
    func authorizationChanged(_ status: String) {
        let (settings, requests) = state.withLock { state in
            state.status = status
            let settings = state.settingsWaiters
            state.settingsWaiters = []
            guard status != "notDetermined" else { return (settings, [@Sendable (Bool, (any Error)?) -> Void]()) }
            defer { state.authorizationWaiters = [] }
            return (settings, state.authorizationWaiters)
        }
        let answer = UNNotificationSettings(authorizationStatus: UNAuthorizationStatus(wire: status))
        DispatchQueue.global().async {
            settings.forEach { $0(answer) }
            requests.forEach { $0(status == "authorized", nil) }
        }
    }

    // MARK: Categories

    /// Keeps the app's categories, and tells the host, which judges a tap's action against them.
    public func setNotificationCategories(_ categories: Set<UNNotificationCategory>) {
        state.withLock { $0.categories = categories }
        let wire = categories.sorted { $0.identifier < $1.identifier }.map { category in
            WireNotificationCategory(
                identifier: category.identifier,
                actions: category.actions.map {
                    .init(identifier: $0.identifier, foreground: $0.options.contains(.foreground), textInput: $0 is UNTextInputNotificationAction)
                },
                customDismissAction: category.options.contains(.customDismissAction))
        }
        let link = Application.shared.link
        if !link.isDetached { link.send(.notification(.categories(wire))) }
    }

    /// The categories set last.
    public func getNotificationCategories(completionHandler: @escaping @Sendable (Set<UNNotificationCategory>) -> Void) {
        let categories = state.withLock { $0.categories }
        DispatchQueue.global().async { completionHandler(categories) }
    }

    // MARK: Requests

    /// Hands `request` to the host, which keeps it (replacing one of its identifier, at most 64
    /// per app) and delivers it at its trigger: a time interval, calendar components (UTC), or
    /// none (now). Other triggers are delivered now, with a warning.
    public func add(_ request: UNNotificationRequest, withCompletionHandler completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        var wire = WireNotificationRequest(
            identifier: request.identifier, title: request.content.title, subtitle: request.content.subtitle, body: request.content.body,
            categoryIdentifier: request.content.categoryIdentifier, repeats: request.trigger?.repeats ?? false)
        let info = Dictionary(uniqueKeysWithValues: request.content.userInfo.compactMap { key, value in (key.base as? String).map { ($0, value) } })
        if !info.isEmpty, JSONSerialization.isValidJSONObject(info), let data = try? JSONSerialization.data(withJSONObject: info, options: [.sortedKeys]) {
            wire.userInfo = String(decoding: data, as: UTF8.self)
        }
        switch request.trigger {
        case let trigger as UNTimeIntervalNotificationTrigger: wire.interval = trigger.timeInterval
        case let trigger as UNCalendarNotificationTrigger: wire.calendar = Self.fields(of: trigger.dateComponents)
        case nil: break
        case let trigger?: Application.shared.link.warn("UNUserNotificationCenter.add: \(type(of: trigger)) is not simulated; \(request.identifier) is delivered now")
        }
        state.withLock { state in
            if state.pending.updateValue(request, forKey: request.identifier) == nil { state.order.append(request.identifier) }
        }
        Application.shared.link.send(.notification(.add(wire)))
        if let completionHandler { DispatchQueue.global().async { completionHandler(nil) } }
    }

    /// `add(_:withCompletionHandler:)`.
    public func add(_ request: UNNotificationRequest) async throws {
        add(request, withCompletionHandler: nil)
    }

    /// The requests this process added that were not removed nor presented or opened in it (the
    /// host's own list, delivered ones included, is the `notifications` command's).
    public func getPendingNotificationRequests(completionHandler: @escaping @Sendable ([UNNotificationRequest]) -> Void) {
        let pending = pendingRequests
        DispatchQueue.global().async { completionHandler(pending) }
    }

    /// `getPendingNotificationRequests(completionHandler:)`'s requests.
    public func pendingNotificationRequests() async -> [UNNotificationRequest] { pendingRequests }

    private var pendingRequests: [UNNotificationRequest] {
        state.withLock { state in state.order.compactMap { state.pending[$0] } }
    }

    /// Removes them at the host too: they are not delivered.
    public func removePendingNotificationRequests(withIdentifiers identifiers: [String]) {
        forget(identifiers)
        Application.shared.link.send(.notification(.removePending(identifiers)))
    }

    public func removeAllPendingNotificationRequests() {
        state.withLock { state in
            state.pending = [:]
            state.order = []
        }
        Application.shared.link.send(.notification(.removePending(nil)))
    }

    /// The app's notifications in Notification Center, newest first, with the dates they were
    /// delivered: those delivered while it was not in the foreground, and those it presented
    /// with `.list`, `.banner` or `.alert`, until tapped or removed (the host's list, given at
    /// launch and kept up to date).
    public func getDeliveredNotifications(completionHandler: @escaping @Sendable ([UNNotification]) -> Void) {
        let delivered = deliveredNotifications
        DispatchQueue.global().async { completionHandler(delivered) }
    }

    /// `getDeliveredNotifications(completionHandler:)`'s notifications.
    public func deliveredNotifications() async -> [UNNotification] { deliveredNotifications }

    private var deliveredNotifications: [UNNotification] {
        state.withLock { $0.delivered }.map { UNNotification(request: Self.request(from: $0.request), date: Date(timeIntervalSince1970: $0.date)) }
    }

    /// Removes them from Notification Center, here and at the host.
    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        state.withLock { $0.delivered.removeAll { identifiers.contains($0.request.identifier) } }
        Application.shared.link.send(.notification(.removeDelivered(identifiers)))
    }

    public func removeAllDeliveredNotifications() {
        state.withLock { $0.delivered = [] }
        Application.shared.link.send(.notification(.removeDelivered(nil)))
    }

    /// The host's list of the app's notifications in Notification Center (at launch, and as it
    /// changes): a request delivered is no longer pending here (unless it repeats).
    func deliveredChanged(_ delivered: [WireDeliveredNotification]) {
        let spent = delivered.filter { !$0.request.repeats }.map(\.request.identifier)
        state.withLock { $0.delivered = delivered }
        forget(spent)
    }

    // MARK: Delivery (from the host, on the main queue)

    /// A notification due while the app is in the foreground: the delegate's `willPresent`,
    /// whose options go to the host (it takes the first answer); no delegate: not shown, as
    /// on iOS.
    @MainActor
    func present(_ wire: WireNotificationRequest) {
        let notification = UNNotification(request: take(wire), date: Date())
        let link = Application.shared.link
        guard let delegate else { return link.send(.notification(.presented(identifier: wire.identifier, options: 0))) }
        delegate.userNotificationCenter(self, willPresent: notification) { options in
            link.send(.notification(.presented(identifier: wire.identifier, options: options.rawValue)))
        }
    }

    /// The user tapped a notification: the delegate's `didReceive` with `action` (a
    /// `UNTextInputNotificationResponse` with the text typed, for a text-input action).
    @MainActor
    func respond(_ wire: WireNotificationRequest, action: String, userText: String?) {
        let notification = UNNotification(request: take(wire), date: Date())
        let response = userText.map { UNTextInputNotificationResponse(notification: notification, actionIdentifier: action, userText: $0) }
            ?? UNNotificationResponse(notification: notification, actionIdentifier: action)
        delegate?.userNotificationCenter(self, didReceive: response) {}
    }

    /// The request as the app made it, if this process did (a repeating one stays pending);
    /// else as the host kept it.
    private func take(_ wire: WireNotificationRequest) -> UNNotificationRequest {
        let made = state.withLock { $0.pending[wire.identifier] }
        if let made {
            if !wire.repeats { forget([wire.identifier]) }
            return made
        }
        return Self.request(from: wire)
    }

    /// The request as the host kept it.
    private static func request(from wire: WireNotificationRequest) -> UNNotificationRequest {
        let content = UNMutableNotificationContent()
        content.title = wire.title
        content.subtitle = wire.subtitle
        content.body = wire.body
        content.categoryIdentifier = wire.categoryIdentifier
        if let json = wire.userInfo, let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] {
            content.userInfo = Dictionary(uniqueKeysWithValues: object.map { (AnyHashable($0.key), $0.value) })
        }
        let trigger: UNNotificationTrigger? = wire.interval.map { UNTimeIntervalNotificationTrigger(timeInterval: $0, repeats: wire.repeats) }
        return UNNotificationRequest(identifier: wire.identifier, content: content, trigger: trigger)
    }

    private func forget(_ identifiers: [String]) {
        state.withLock { state in
            for identifier in identifiers { state.pending[identifier] = nil }
            state.order.removeAll { identifiers.contains($0) }
        }
    }

    private static func fields(of components: DateComponents) -> [String: Int] {
        let pairs: [(String, Int?)] = [
            ("year", components.year), ("month", components.month), ("day", components.day), ("hour", components.hour),
            ("minute", components.minute), ("second", components.second), ("weekday", components.weekday),
        ]
        return Dictionary(uniqueKeysWithValues: pairs.compactMap { name, value in value.map { (name, $0) } })
    }
}

extension UNAuthorizationStatus {
    init(wire: String) {
        switch wire {
        case "authorized": self = .authorized
        case "denied": self = .denied
        default: self = .notDetermined
        }
    }
}
