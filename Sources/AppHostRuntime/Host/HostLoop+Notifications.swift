import Foundation
import Dispatch
import AppHostProtocol

// User notifications (docs/porting.md, "Porting iOS code", UserNotifications): authorization is a
// setting of the host (`authorize APP notifications granted|denied`), which an app that asks
// before it is set waits for, as iOS's prompt waits for the user; requests the app adds are kept
// by the host and become due on the scheduler's clock (so `advance` makes them due): presented to
// an app in the foreground (`willPresent`), else kept as delivered until `tap-notification`
// opens the app with them (`didReceive`, once it is active). UserNotificationService decides;
// this delivers.

extension HostLoop {
    // MARK: Commands

    /// Sets APP's notification authorization (`authorize APP notifications granted|denied`),
    /// kept in the state directory; a running app is told once it is kept (which answers a
    /// `requestAuthorization` that waits for it).
    func authorizeNotifications(_ name: String, _ authorization: NotificationAuthorization) async throws -> String {
        let record = try queue.sync { try app(named: name) }
        await withCheckedContinuation { (saved: CheckedContinuation<Void, Never>) in
            queue.async { [self] in notifications.authorize(record.bundle.identifier, authorization) { saved.resume() } }
        }
        queue.sync { perform(notifications.authorizationKept(authorization, for: notificationFacts(record))) }
        return "\(record.bundle.name): notification authorization \(authorization.rawValue)"
    }

    /// Every pending and delivered notification of the installed apps (`notifications`): per
    /// app in installation order, pending ones by due time, then delivered ones.
    func notificationListing() -> [NotificationListing] {
        queue.sync { notifications.listing(apps.map(notificationFacts)) }
    }

    /// The user taps APP's delivered notification (`tap-notification APP IDENTIFIER [ACTION]
    /// [--text TEXT]`): it leaves Notification Center. The default action, or one with
    /// `.foreground`, opens the app (launching it if it is not running) and its center
    /// delegate's `didReceive` runs once it is active; any other action runs the app in the
    /// background (launching or resuming it there) for `didReceive`; a dismissal reaches the app
    /// only if its category has `.customDismissAction`.
    func tapNotification(_ name: String, identifier: String, action: String? = nil, text: String? = nil) throws -> String {
        try queue.sync {
            let record = try app(named: name)
            let (outcome, effects) = try notifications.tapped(identifier, action: action, text: text, of: notificationFacts(record))
            perform(effects)
            let tapped = "tapped \(identifier.debugDescription)" + (action.map { " (\($0))" } ?? "")
            switch outcome {
            case .nothing:
                return announce(record, command: .notification, "\(tapped); dismissed, nothing reaches the app", nil)
            case .open:
                let line = announce(record, command: .notification, "\(tapped); opening the app", nil)
                open(record)
                deliverTaps(record)
                return line
            case .runInBackground:
                let line = announce(record, command: .notification, "\(tapped); running the app in the background", nil)
                if record.run?.machine.isAlive != true { start(record, kind: .background, reason: "background") }
                // Running: it hears it now; suspended: it is woken for it.
                deliverTaps(record)
                return line
            }
        }
    }

    // MARK: The app's requests

    func receiveNotificationAsk(_ ask: WireNotificationAsk, _ record: AppRecord) {
        perform(notifications.answer(ask, from: notificationFacts(record), now: scheduler.now, textLimit: ControlStage.textLimit))
        armNotificationTimer()
    }

    // MARK: Delivering

    /// Delivers the notifications due on the scheduler's clock. Returns what it delivered, for
    /// `advance`.
    @discardableResult
    func deliverDueNotifications() -> [String] {
        let (delivered, effects) = notifications.deliverDue(now: scheduler.now, apps: apps.map(notificationFacts))
        perform(effects)
        armNotificationTimer()
        return delivered
    }

    /// Sets the host's timer for the next pending notification (the scheduler's dates are the
    /// wall clock's, shifted by `advance`; the timer runs on the monotonic clock).
    func armNotificationTimer() {
        timers.set(.notifications, at: notifications.nextDeadline(
            now: clock.now, schedulerNow: scheduler.now, installed: Set(apps.map(\.bundle.identifier))))
    }

    /// The app's state changed: the taps that wait for it reach its center delegate
    /// (`didReceive`): those that open it once it is active, background actions once it runs.
    func deliverTaps(_ record: AppRecord) {
        perform(notifications.ready(notificationFacts(record)))
    }

    /// The app's Notification Center, for its launch (`getDeliveredNotifications`); nil if empty.
    func deliveredNotifications(of record: AppRecord) -> [WireDeliveredNotification]? {
        let delivered = notifications.deliveredForApp(record.bundle.identifier)
        return delivered.isEmpty ? nil : delivered
    }

    // MARK: Routing

    /// What the notification rules need to know of the app now.
    private func notificationFacts(_ record: AppRecord) -> UserNotificationService.App {
        let machine = record.run?.machine
        let state = currentState(of: record)
        let runs = machine.map { $0.isLive && $0.launchFinished } ?? false
        return UserNotificationService.App(
            identifier: record.bundle.identifier, name: record.bundle.name, isLive: machine?.isLive ?? false,
            presents: machine.map { $0.isLive && $0.launchFinished && $0.isInForeground } ?? false,
            isActive: runs && state == .active, runs: runs && [.active, .inactive, .background].contains(state) && machine?.phase != .suspending,
            isSuspended: machine?.isAlive == true && state == .suspended)
    }

    /// Performs the notification center's effects, in order.
    private func perform(_ effects: [UserNotificationService.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let id, let tell):
                guard let record = apps.record(identifier: id), let run = record.run else { continue }
                send(.notification(tell), record, run)
            case .event(let id, let detail):
                if let record = apps.record(identifier: id) { notificationEvent(record, detail) }
            case .warning(let id, let detail):
                guard let record = apps.record(identifier: id), let run = record.run else { continue }
                handle(record, run, .warning(detail))
            case .wake(let id):
                guard let record = apps.record(identifier: id), let run = record.run else { continue }
                handle(record, run, .wakeInBackground)
            case .deliverDue:
                // Due now (no trigger): delivered behind this message, not inside it.
                post(.pass(.notifications))
            }
        }
    }

    private func notificationEvent(_ record: AppRecord, _ detail: String) {
        let run = record.run?.machine.isAlive == true ? record.run : nil
        publish(HostEvent(
            time: Date(), app: record.bundle.identifier, name: record.bundle.name, pid: run?.process?.pid, event: .notification,
            state: currentState(of: record), detail: detail), run: run)
    }
}
