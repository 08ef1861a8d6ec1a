import Foundation
import AppHostProtocol

// User notifications (README.md, "Porting iOS code", UserNotifications): each app's
// authorization (a setting of the host, as location's is), its pending requests (due on the
// scheduler's clock, so `advance` makes them due) and the notifications delivered while it was
// not in the foreground, all kept in one store; and the device token each app registers with.

/// An app's notification authorization, a setting of the host (`authorize APP notifications …`).
public enum NotificationAuthorization: String, Sendable, Codable, CaseIterable {
    case granted
    case denied

    /// `UNAuthorizationStatus`'s name, as the SDK reads it.
    var wireName: String { self == .granted ? "authorized" : "denied" }
}

/// A request the host keeps: pending until `due` (seconds since 1970 on the scheduler's clock),
/// then delivered (`deliveredAt`) until the user taps it or the app removes it.
struct KeptNotification: Codable, Equatable, Sendable {
    var request: WireNotificationRequest
    var due: Double
    var deliveredAt: Double?
}

/// What the host keeps for one app.
struct AppNotifications: Codable, Equatable, Sendable {
    var authorization: NotificationAuthorization?
    var pending: [KeptNotification] = []
    var delivered: [KeptNotification] = []
}

/// The host's notification center: decides when requests are due, which are kept, and what a
/// tap opens; the supervisor delivers (Supervisor+Notifications.swift). Touched only on the
/// host's loop; every change is saved off it through the store.
final class UserNotificationService {
    /// iOS keeps an app's 64 soonest pending requests and drops the rest; delivered
    /// notifications are bounded the same way here (the oldest go).
    static let pendingLimit = 64
    static let deliveredLimit = 64

    private var apps: [String: AppNotifications]
    private let store: StateStore<[String: AppNotifications]>
    /// Taps waiting for their app to become active, by bundle identifier (not kept: a tap is
    /// the user's, on this host).
    private var taps: [String: [WireNotificationRequest]] = [:]
    let loadWarning: String?

    init(store: StateStore<[String: AppNotifications]>) {
        self.store = store
        let (loaded, warning) = store.load()
        apps = loaded ?? [:]
        loadWarning = warning
    }

    private func save(then kept: (@Sendable () -> Void)? = nil) { store.save(apps, then: kept) }

    // MARK: Authorization

    func authorization(of app: String) -> NotificationAuthorization? { apps[app]?.authorization }

    /// `UNAuthorizationStatus`'s name for the app: notDetermined until the host has a setting.
    func status(of app: String) -> String { authorization(of: app)?.wireName ?? "notDetermined" }

    /// Sets the app's authorization; `kept` runs (on the writer's thread) once it is on the disk.
    func authorize(_ app: String, _ authorization: NotificationAuthorization, kept: @escaping @Sendable () -> Void) {
        apps[app, default: AppNotifications()].authorization = authorization
        save(then: kept)
    }

    // MARK: Requests

    enum Added: Equatable {
        /// Kept, due at `due`; `dropped` is the identifier of the latest-due request the limit
        /// pushed out (possibly this one), if any.
        case added(due: Double, dropped: String?)
        /// Never due (a calendar trigger that matches no date): not kept.
        case refused(String)
    }

    /// Keeps `request` for the app (replacing a pending one of its identifier), due by its
    /// trigger from `now`; no trigger: due now.
    func add(_ request: WireNotificationRequest, for app: String, now: Double) -> Added {
        guard let due = Self.firstDue(of: request, after: now) else {
            return .refused("its calendar trigger \(request.calendar ?? [:]) matches no date")
        }
        var kept = apps[app, default: AppNotifications()]
        kept.pending.removeAll { $0.request.identifier == request.identifier }
        kept.pending.append(KeptNotification(request: request, due: due))
        var dropped: String?
        if kept.pending.count > Self.pendingLimit {
            // The soonest are kept; of equal dates, the earlier added.
            let latest = kept.pending.indices.max { kept.pending[$0].due <= kept.pending[$1].due }!
            dropped = kept.pending.remove(at: latest).request.identifier
        }
        apps[app] = kept
        save()
        return .added(due: due, dropped: dropped)
    }

    /// Removes the app's pending requests with these identifiers (nil: all); returns those removed.
    @discardableResult
    func removePending(_ identifiers: [String]?, for app: String) -> [String] {
        guard var kept = apps[app] else { return [] }
        let removed = kept.pending.filter { identifiers?.contains($0.request.identifier) ?? true }.map(\.request.identifier)
        kept.pending.removeAll { identifiers?.contains($0.request.identifier) ?? true }
        apps[app] = kept
        if !removed.isEmpty { save() }
        return removed
    }

    /// Removes the app's delivered notifications with these identifiers (nil: all).
    func removeDelivered(_ identifiers: [String]?, for app: String) {
        guard var kept = apps[app] else { return }
        let before = kept.delivered.count
        kept.delivered.removeAll { identifiers?.contains($0.request.identifier) ?? true }
        apps[app] = kept
        if kept.delivered.count != before { save() }
    }

    /// The requests of `installed` apps due by `now`, soonest first, taken from the pending ones
    /// (a repeating one stays pending, due again by its trigger after `now`). An app this host
    /// does not have keeps its requests for a host that has it.
    func takeDue(now: Double, installed: Set<String>) -> [(app: String, notification: KeptNotification)] {
        var due: [(app: String, notification: KeptNotification)] = []
        for app in apps.keys.sorted() where installed.contains(app) {
            guard var kept = apps[app], kept.pending.contains(where: { $0.due <= now }) else { continue }
            for notification in kept.pending where notification.due <= now { due.append((app, notification)) }
            kept.pending = kept.pending.compactMap { notification in
                guard notification.due <= now else { return notification }
                guard notification.request.repeats, let next = Self.firstDue(of: notification.request, after: now) else { return nil }
                return KeptNotification(request: notification.request, due: max(next, now + 1))
            }
            apps[app] = kept
        }
        if !due.isEmpty { save() }
        return due.sorted { $0.notification.due < $1.notification.due }
    }

    /// Keeps a notification delivered while its app was not in the foreground (replacing one
    /// of its identifier), until it is tapped or removed.
    func keepDelivered(_ notification: KeptNotification, for app: String, at now: Double) {
        var kept = apps[app, default: AppNotifications()]
        kept.delivered.removeAll { $0.request.identifier == notification.request.identifier }
        var delivered = notification
        delivered.deliveredAt = now
        kept.delivered.append(delivered)
        if kept.delivered.count > Self.deliveredLimit { kept.delivered.removeFirst() }
        apps[app] = kept
        save()
    }

    /// When the next pending request of an `installed` app is due, if any.
    func nextDue(installed: Set<String>) -> Double? {
        apps.filter { installed.contains($0.key) }.values.flatMap(\.pending).map(\.due).min()
    }

    func pending(of app: String) -> [KeptNotification] { apps[app]?.pending ?? [] }
    func delivered(of app: String) -> [KeptNotification] { apps[app]?.delivered ?? [] }

    // MARK: Taps

    /// The user tapped the app's delivered notification `identifier`: it leaves the delivered
    /// ones and waits for the app to be active. Nil if the app has no such notification.
    func tap(_ identifier: String, for app: String) -> WireNotificationRequest? {
        guard var kept = apps[app], let index = kept.delivered.firstIndex(where: { $0.request.identifier == identifier }) else { return nil }
        let request = kept.delivered.remove(at: index).request
        apps[app] = kept
        save()
        taps[app, default: []].append(request)
        return request
    }

    /// The taps waiting for the app, taken (it is active now).
    func takeTaps(for app: String) -> [WireNotificationRequest] {
        taps.removeValue(forKey: app) ?? []
    }

    // MARK: Triggers and tokens

    /// When the request is first due after `now`: its interval from now, the next date its
    /// calendar components match (UTC), or now without a trigger; nil if it never is.
    static func firstDue(of request: WireNotificationRequest, after now: Double) -> Double? {
        if let interval = request.interval { return now + interval }
        guard let fields = request.calendar else { return now }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var components = DateComponents()
        components.year = fields["year"]
        components.month = fields["month"]
        components.day = fields["day"]
        components.hour = fields["hour"]
        components.minute = fields["minute"]
        components.second = fields["second"]
        components.weekday = fields["weekday"]
        return calendar.nextDate(after: Date(timeIntervalSince1970: now), matching: components, matchingPolicy: .nextTime)?
            .timeIntervalSince1970
    }

    /// The app's device token (`WireNotificationRequest.deviceToken(for:)`): the host hands it out.
    static func deviceToken(for app: String) -> [UInt8] { WireNotificationRequest.deviceToken(for: app) }
}
