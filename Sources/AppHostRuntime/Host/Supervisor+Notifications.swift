public import Foundation
import Dispatch
import AppHostProtocol

// User notifications (README.md, "Porting iOS code", UserNotifications): authorization is a
// setting of the host (`authorize APP notifications granted|denied`), which an app that asks
// before it is set waits for, as iOS's prompt waits for the user; requests the app adds are kept
// by the host and become due on the scheduler's clock (so `advance` makes them due): presented to
// an app in the foreground (`willPresent`), else kept as delivered until `tap-notification`
// opens the app with them (`didReceive`, once it is active). UserNotificationService decides;
// this delivers.

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

extension Supervisor {
    // MARK: Commands

    /// Sets APP's notification authorization (`authorize APP notifications granted|denied`),
    /// kept in the state directory; a running app is told once it is kept (which answers a
    /// `requestAuthorization` that waits for it).
    public func authorizeNotifications(_ name: String, _ authorization: NotificationAuthorization) async throws -> String {
        let record = try queue.sync { try app(named: name) }
        await withCheckedContinuation { (saved: CheckedContinuation<Void, Never>) in
            queue.async { [self] in notifications.authorize(record.bundle.identifier, authorization) { saved.resume() } }
        }
        queue.sync {
            guard notifications.authorization(of: record.bundle.identifier) == authorization else { return }
            if let run = record.run, run.machine.isLive { send(.notification(.authorization(authorization.wireName)), record, run) }
            notificationEvent(record, "authorization \(authorization.rawValue)")
        }
        return "\(record.bundle.name): notification authorization \(authorization.rawValue)"
    }

    /// Every pending and delivered notification of the installed apps (`notifications`): per
    /// app in installation order, pending ones by due time, then delivered ones.
    public func notificationListing() -> [NotificationListing] {
        queue.sync {
            apps.flatMap { record -> [NotificationListing] in
                let id = record.bundle.identifier
                func line(_ kept: KeptNotification, _ state: String) -> NotificationListing {
                    NotificationListing(
                        app: id, name: record.bundle.name, identifier: kept.request.identifier, title: kept.request.title,
                        due: Date(timeIntervalSince1970: kept.due), state: state, repeats: kept.request.repeats)
                }
                return notifications.pending(of: id).sorted { $0.due < $1.due }.map { line($0, "pending") }
                    + notifications.delivered(of: id).map { line($0, "delivered") }
            }
        }
    }

    /// The user taps APP's delivered notification (`tap-notification APP IDENTIFIER`): the app
    /// is opened (launched if it is not running) and its center delegate's `didReceive` runs
    /// with the default action once it is active.
    public func tapNotification(_ name: String, identifier: String) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            guard notifications.tap(identifier, for: record.bundle.identifier) != nil else {
                let delivered = notifications.delivered(of: record.bundle.identifier).map(\.request.identifier)
                throw SupervisorError(
                    "\(record.bundle.name) has no delivered notification \(identifier.debugDescription) (delivered: \(delivered.isEmpty ? "none" : delivered.joined(separator: ", ")))",
                    code: .refused)
            }
            let line = announce(record, command: .notification, "tapped \(identifier.debugDescription); opening the app", nil)
            open(record)
            // Active already (open changes nothing): no state change will deliver it.
            if let run = record.run, run.machine.isLive, run.lastState == .active { deliverTaps(record, run) }
            return line
        }
    }

    // MARK: The app's requests

    func receiveNotificationAsk(_ ask: WireNotificationAsk, _ record: AppRecord, _ run: AppRun) {
        let id = record.bundle.identifier
        switch ask {
        case .requestAuthorization:
            if let authorization = notifications.authorization(of: id) {
                send(.notification(.authorization(authorization.wireName)), record, run)
                notificationEvent(record, "asked for authorization; it is \(authorization.rawValue)")
            } else {
                notificationEvent(record, "asked for authorization; it is notDetermined (answer with authorize \(record.bundle.name) notifications granted|denied)")
            }
        case .settings:
            send(.notification(.authorization(notifications.status(of: id))), record, run)
        case .add(var request):
            request.identifier = request.identifier.cut(to: 256)
            request.title = request.title.cut(to: Self.textLimit)
            request.subtitle = request.subtitle.cut(to: Self.textLimit)
            request.body = request.body.cut(to: Self.textLimit)
            request.userInfo = request.userInfo?.cut(to: Self.textLimit)
            if let interval = request.interval, !(interval > 0 && interval.isFinite) {
                return handle(record, run, .warning("notification request \(request.identifier.debugDescription) refused: its time interval must be greater than 0"))
            }
            switch notifications.add(request, for: id, now: scheduler.now) {
            case .added(let due, let dropped):
                let when = HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: due))
                notificationEvent(record, "kept \(request.identifier.debugDescription), due \(when)"
                    + (dropped.map { "; \($0.debugDescription) dropped: an app keeps its \(UserNotificationService.pendingLimit) soonest requests" } ?? ""))
            case .refused(let why):
                handle(record, run, .warning("notification request \(request.identifier.debugDescription) refused: \(why)"))
            }
            armNotificationTimer()
            // Due now (no trigger): delivered behind this message, not inside it.
            queue.async { [weak self] in self?.deliverDueNotifications() }
        case .removePending(let identifiers):
            let removed = notifications.removePending(identifiers, for: id)
            notificationEvent(record, "removed pending \(removed.isEmpty ? "nothing" : removed.map(\.debugDescription).joined(separator: ", "))")
            armNotificationTimer()
        case .removeDelivered(let identifiers):
            notifications.removeDelivered(identifiers, for: id)
        case .registerForRemoteNotifications:
            let token = UserNotificationService.deviceToken(for: id)
            send(.notification(.deviceToken(token)), record, run)
            notificationEvent(record, "registered for remote notifications: device token \(token.map { String(format: "%02x", $0) }.joined())")
        }
    }

    // MARK: Delivering

    /// Delivers the notifications due on the scheduler's clock: presented to an app in the
    /// foreground, else kept as delivered. Returns what it delivered, for `advance`.
    @discardableResult
    func deliverDueNotifications() -> [String] {
        let now = scheduler.now
        var delivered: [String] = []
        for (app, kept) in notifications.takeDue(now: now, installed: installedIdentifiers) {
            guard let record = apps.first(where: { $0.bundle.identifier == app }) else { continue }
            let identifier = kept.request.identifier.debugDescription
            guard notifications.authorization(of: app) == .granted else {
                notificationEvent(record, "\(identifier) due, not shown: notifications are \(notifications.status(of: app)) for the app")
                continue
            }
            delivered.append("notification \(record.bundle.name) \(kept.request.identifier)")
            if let run = record.run, run.machine.isLive, run.machine.launchFinished, run.machine.isInForeground {
                send(.notification(.present(kept.request)), record, run)
                notificationEvent(record, "\(identifier) presented to the app in the foreground (willPresent)")
            } else {
                notifications.keepDelivered(kept, for: app, at: now)
                notificationEvent(record, "\(identifier) delivered: \(kept.request.title.debugDescription) (tap-notification \(record.bundle.name) \(kept.request.identifier) opens it)")
            }
        }
        armNotificationTimer()
        return delivered
    }

    /// Sets the host's timer for the next pending notification (the scheduler's dates are the
    /// wall clock's, shifted by `advance`; the timer runs on the monotonic clock).
    func armNotificationTimer() {
        let next = notifications.nextDue(installed: installedIdentifiers)
        timers.set(.notifications, at: next.map { clock.now + .seconds(double: max(0, $0 - scheduler.now)) })
    }

    private var installedIdentifiers: Set<String> { Set(apps.map(\.bundle.identifier)) }

    /// The app became active: the taps that wait for it reach its center delegate (`didReceive`).
    func deliverTaps(_ record: AppRecord, _ run: AppRun) {
        for request in notifications.takeTaps(for: record.bundle.identifier) {
            send(.notification(.respond(request, action: "com.apple.UNNotificationDefaultActionIdentifier")), record, run)
            notificationEvent(record, "\(request.identifier.debugDescription) opened by the user (didReceive)")
        }
    }

    func notificationEvent(_ record: AppRecord, _ detail: String) {
        let run = record.run?.machine.isAlive == true ? record.run : nil
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run?.process?.pid, event: .notification,
            state: currentState(of: record), detail: detail), run: run)
    }
}
