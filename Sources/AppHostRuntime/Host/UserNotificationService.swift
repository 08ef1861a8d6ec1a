public import Foundation
import AppHostProtocol

// User notifications (docs/porting.md, "Porting iOS code", UserNotifications): each app's
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

/// The host's notification center: decides when requests are due, to which app and how they
/// are delivered, which are kept, what a tap opens and how an app's questions are answered, as
/// effects the supervisor performs (Supervisor+Notifications.swift). Touched only on the host's
/// loop; every change is saved off it through the store.
final class UserNotificationService {
    /// iOS keeps an app's 64 soonest pending requests and drops the rest; delivered
    /// notifications are bounded the same way here (the oldest go).
    static let pendingLimit = 64
    static let deliveredLimit = 64

    /// What the rules need to know of an installed app, as the host sees it now.
    struct App: Equatable {
        var identifier: String
        var name: String
        /// Its process runs and is not ending.
        var isLive = false
        /// It runs in the foreground past its launch: a notification due is presented to it.
        var presents = false
    }

    /// What the host does for a decision, in order, to the app of that bundle identifier.
    enum Effect: Equatable {
        /// Tell the app's run.
        case send(String, WireNotificationTell)
        /// A `notification` event of the app.
        case event(String, String)
        /// A warning of the app's run (a request refused).
        case warning(String, String)
        /// Deliver what is due, behind the message being handled (not inside it).
        case deliverDue
    }

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

    // MARK: Rules

    /// The app's authorization `authorization`, set by the host, is on the disk: a running app
    /// is told (which answers a `requestAuthorization` that waits for it). Nothing if the setting
    /// changed meanwhile.
    func authorizationKept(_ authorization: NotificationAuthorization, for app: App) -> [Effect] {
        guard self.authorization(of: app.identifier) == authorization else { return [] }
        return (app.isLive ? [.send(app.identifier, .authorization(authorization.wireName))] : [])
            + [.event(app.identifier, "authorization \(authorization.rawValue)")]
    }

    /// Answers the app's request: its authorization (waiting for the host's setting if there is
    /// none), its settings, a request kept (cut to `textLimit`, refused if it would never be due),
    /// requests removed, its device token. `now` is the scheduler's clock.
    func answer(_ ask: WireNotificationAsk, from app: App, now: Double, textLimit: Int) -> [Effect] {
        let id = app.identifier
        switch ask {
        case .requestAuthorization:
            guard let authorization = authorization(of: id) else {
                return [.event(id, "asked for authorization; it is notDetermined (answer with authorize \(app.name) notifications granted|denied)")]
            }
            return [.send(id, .authorization(authorization.wireName)), .event(id, "asked for authorization; it is \(authorization.rawValue)")]
        case .settings:
            return [.send(id, .authorization(status(of: id)))]
        case .add(var request):
            request.identifier = request.identifier.cut(to: 256)
            request.title = request.title.cut(to: textLimit)
            request.subtitle = request.subtitle.cut(to: textLimit)
            request.body = request.body.cut(to: textLimit)
            request.userInfo = request.userInfo?.cut(to: textLimit)
            if let interval = request.interval, !(interval > 0 && interval.isFinite) {
                return [.warning(id, "notification request \(request.identifier.debugDescription) refused: its time interval must be greater than 0")]
            }
            switch add(request, for: id, now: now) {
            case .added(let due, let dropped):
                let when = HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: due))
                return [.event(id, "kept \(request.identifier.debugDescription), due \(when)"
                    + (dropped.map { "; \($0.debugDescription) dropped: an app keeps its \(Self.pendingLimit) soonest requests" } ?? "")),
                    .deliverDue]
            case .refused(let why):
                return [.warning(id, "notification request \(request.identifier.debugDescription) refused: \(why)"), .deliverDue]
            }
        case .removePending(let identifiers):
            let removed = removePending(identifiers, for: id)
            return [.event(id, "removed pending \(removed.isEmpty ? "nothing" : removed.map(\.debugDescription).joined(separator: ", "))")]
        case .removeDelivered(let identifiers):
            removeDelivered(identifiers, for: id)
            return []
        case .registerForRemoteNotifications:
            let token = Self.deviceToken(for: id)
            return [.send(id, .deviceToken(token)),
                    .event(id, "registered for remote notifications: device token \(token.map { String(format: "%02x", $0) }.joined())")]
        }
    }

    /// The notifications of these installed apps due by `now` (the scheduler's clock): not
    /// shown if the app is not granted them, presented to an app in the foreground
    /// (`willPresent`), else kept as delivered until tapped. `delivered` names those shown, for
    /// `advance`.
    func deliverDue(now: Double, apps: [App]) -> (delivered: [String], effects: [Effect]) {
        let byIdentifier = Dictionary(apps.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
        var delivered: [String] = []
        var effects: [Effect] = []
        for (id, kept) in takeDue(now: now, installed: Set(byIdentifier.keys)) {
            guard let app = byIdentifier[id] else { continue }
            let identifier = kept.request.identifier.debugDescription
            guard authorization(of: id) == .granted else {
                effects.append(.event(id, "\(identifier) due, not shown: notifications are \(status(of: id)) for the app"))
                continue
            }
            delivered.append("notification \(app.name) \(kept.request.identifier)")
            if app.presents {
                effects += [.send(id, .present(kept.request)), .event(id, "\(identifier) presented to the app in the foreground (willPresent)")]
            } else {
                keepDelivered(kept, for: id, at: now)
                effects.append(.event(id, "\(identifier) delivered: \(kept.request.title.debugDescription) (tap-notification \(app.name) \(kept.request.identifier) opens it)"))
            }
        }
        return (delivered, effects)
    }

    /// When the host's timer (on `now`, the monotonic clock) is due for the next pending request
    /// of an `installed` app, which is due on the scheduler's clock (`schedulerNow`).
    func nextDeadline(now: HostInstant, schedulerNow: Double, installed: Set<String>) -> HostInstant? {
        nextDue(installed: installed).map { now + .seconds(double: max(0, $0 - schedulerNow)) }
    }

    /// The user taps the app's delivered notification `identifier` (`tap-notification`): it waits
    /// for the app to become active (`becameActive`), which the host opens; or why not.
    func tap(_ identifier: String, of app: App) throws(SupervisorError) {
        guard tap(identifier, for: app.identifier) == nil else { return }
        let delivered = delivered(of: app.identifier).map(\.request.identifier)
        throw SupervisorError(
            "\(app.name) has no delivered notification \(identifier.debugDescription) (delivered: \(delivered.isEmpty ? "none" : delivered.joined(separator: ", ")))",
            code: .refused)
    }

    /// The app became active: the taps that wait for it reach its center delegate (`didReceive`).
    func becameActive(_ app: String) -> [Effect] {
        takeTaps(for: app).flatMap { request -> [Effect] in
            [.send(app, .respond(request, action: "com.apple.UNNotificationDefaultActionIdentifier")),
             .event(app, "\(request.identifier.debugDescription) opened by the user (didReceive)")]
        }
    }

    /// The notifications of these apps as `notifications` lists them: per app in the order given,
    /// pending ones by due time, then delivered ones.
    func listing(_ apps: [App]) -> [NotificationListing] {
        apps.flatMap { app -> [NotificationListing] in
            func line(_ kept: KeptNotification, _ state: String) -> NotificationListing {
                NotificationListing(
                    app: app.identifier, name: app.name, identifier: kept.request.identifier, title: kept.request.title,
                    due: Date(timeIntervalSince1970: kept.due), state: state, repeats: kept.request.repeats)
            }
            return pending(of: app.identifier).sorted { $0.due < $1.due }.map { line($0, "pending") }
                + delivered(of: app.identifier).map { line($0, "delivered") }
        }
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

/// One line of `notifications`: a pending or delivered notification.
public struct NotificationListing: Sendable, Equatable, Encodable {
    public var app: String
    public var name: String
    public var identifier: String
    public var title: String
    /// When it is (or was) due, on the scheduler's clock.
    public var due: Date
    /// `pending` or `delivered`.
    public var state: String
    public var repeats: Bool

    private enum CodingKeys: String, CodingKey { case event, app, name, identifier, title, due, state, repeats }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("notificationListing", forKey: .event)
        try container.encode(app, forKey: .app)
        try container.encode(name, forKey: .name)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(title, forKey: .title)
        try container.encode(HostEvent.isoFormatter.string(from: due), forKey: .due)
        try container.encode(state, forKey: .state)
        try container.encode(repeats, forKey: .repeats)
    }
}
