public import Foundation
import AppHostProtocol

// The host's notification rules (UserNotificationService): how an app's questions are answered,
// which notifications are due and how each is shown, what a tap does and how `notifications`
// lists them. Pure functions of the service's state, the input and the time, returning effects.

extension UserNotificationService {
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
            return removeDelivered(identifiers, for: id) ? [.send(id, .delivered(deliveredForApp(id)))] : []
        case .presented(let identifier, let options):
            return presented(identifier, options: options, by: app, now: now)
        case .categories(let categories):
            setCategories(categories, for: id)
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
                var presented = kept
                presented.deliveredAt = now
                presenting(presented, to: id)
                effects += [.send(id, .present(kept.request)), .event(id, "\(identifier) presented to the app in the foreground (willPresent)")]
            } else {
                keepDelivered(kept, for: id, at: now)
                effects += (app.isLive ? [.send(id, .delivered(deliveredForApp(id)))] : [])
                    + [.event(id, "\(identifier) delivered: \(kept.request.title.debugDescription) (tap-notification \(app.name) \(kept.request.identifier) opens it)")]
            }
        }
        return (delivered, effects)
    }

    /// When the host's timer (on `now`, the monotonic clock) is due for the next pending request
    /// of an `installed` app, which is due on the scheduler's clock (`schedulerNow`).
    func nextDeadline(now: HostInstant, schedulerNow: Double, installed: Set<String>) -> HostInstant? {
        nextDue(installed: installed).map { now + .seconds(double: max(0, $0 - schedulerNow)) }
    }

    /// The app answered `willPresent` for `identifier` with `options`
    /// (UNNotificationPresentationOptions' raw value): with `.list`, `.banner` or `.alert` it is
    /// shown and stays in Notification Center, tappable; with none of them it is not listed.
    func presented(_ identifier: String, options: UInt, by app: App, now: Double) -> [Effect] {
        let id = app.identifier
        guard let kept = takePresented(identifier, for: id) else { return [] }
        let named = Self.presentationNames(options)
        let shown = "\(identifier.debugDescription) presented with [\(named.joined(separator: ", "))]"
        guard options & Self.listedOptions != 0 else {
            return [.event(id, shown + ": not shown, not in Notification Center")]
        }
        keepDelivered(kept, for: id, at: kept.deliveredAt ?? now, presented: options)
        return [.send(id, .delivered(deliveredForApp(id))),
                .event(id, shown + ": in Notification Center (tap-notification \(app.name) \(identifier) opens it)")]
    }

    /// `.alert`, `.list` and `.banner`: a notification presented with any of them is listed.
    static let listedOptions: UInt = 1 << 2 | 1 << 3 | 1 << 4

    /// The names of UNNotificationPresentationOptions' bits, in Apple's order.
    static func presentationNames(_ options: UInt) -> [String] {
        let names: [(UInt, String)] = [(1 << 0, "badge"), (1 << 1, "sound"), (1 << 2, "alert"), (1 << 3, "list"), (1 << 4, "banner")]
        return names.filter { options & $0.0 != 0 }.map(\.1)
    }

    /// The user tapped the app's delivered notification (`tap-notification`): it leaves
    /// Notification Center (a running app is told), and what the host does for it, or why not.
    func tapped(_ identifier: String, action: String?, text: String?, of app: App) throws(SupervisorError) -> (TapOutcome, [Effect]) {
        let outcome = try tap(identifier, action: action, text: text, of: app)
        let told: [Effect] = app.isLive ? [.send(app.identifier, .delivered(deliveredForApp(app.identifier)))] : []
        switch outcome {
        case .nothing: return (outcome, told + [.event(app.identifier, "\(identifier.debugDescription) dismissed by the user")])
        case .open, .runInBackground: return (outcome, told)
        }
    }

    /// The app's state changed: the taps that wait for it reach its center delegate
    /// (`didReceive`): those that open it once it is active, background actions once it runs.
    /// A background action that finds it suspended (tapped while it was being suspended) wakes it.
    func ready(_ app: App) -> [Effect] {
        let ready = takeTaps(for: app)
        if ready.isEmpty, app.isSuspended, waitsToRun(app.identifier) { return [.wake(app.identifier)] }
        return ready.flatMap { tap -> [Effect] in
            let how = tap.action == "com.apple.UNNotificationDefaultActionIdentifier" ? "opened by the user"
                : tap.action == "com.apple.UNNotificationDismissActionIdentifier" ? "dismissed by the user"
                : "answered with \(tap.action.debugDescription)" + (tap.userText.map { ", text \($0.debugDescription)" } ?? "")
                    + (tap.foreground ? "" : " in the background")
            return [.send(app.identifier, .respond(tap.request, action: tap.action, userText: tap.userText)),
                    .event(app.identifier, "\(tap.request.identifier.debugDescription) \(how) (didReceive)")]
        }
    }

    /// The notifications of these apps as `notifications` lists them: per app in the order given,
    /// pending ones by due time, then delivered ones, oldest first.
    func listing(_ apps: [App]) -> [NotificationListing] {
        apps.flatMap { app -> [NotificationListing] in
            func line(_ kept: KeptNotification, _ state: String) -> NotificationListing {
                NotificationListing(
                    app: app.identifier, name: app.name, identifier: kept.request.identifier, title: kept.request.title,
                    due: Date(timeIntervalSince1970: kept.due), state: state, repeats: kept.request.repeats,
                    presented: kept.presented.map(Self.presentationNames))
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
    /// The presentation options a delivered notification was presented with in the foreground
    /// (`willPresent`); nil: delivered while the app was not in the foreground.
    public var presented: [String]?

    private enum CodingKeys: String, CodingKey { case event, app, name, identifier, title, due, state, repeats, presented }

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
        try container.encodeIfPresent(presented, forKey: .presented)
    }
}
