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
    /// The `UNNotificationPresentationOptions` (raw value) the app presented it with in the
    /// foreground (`willPresent`); nil: delivered while the app was not in the foreground.
    var presented: UInt?
}

/// What the host keeps for one app.
struct AppNotifications: Codable, Equatable, Sendable {
    var authorization: NotificationAuthorization?
    var pending: [KeptNotification] = []
    var delivered: [KeptNotification] = []
    /// The categories the app registered last (`setNotificationCategories`): a tap's actions.
    var categories: [WireNotificationCategory]?
}

/// The host's notification center: decides when requests are due, to which app and how they
/// are delivered, which are kept, what a tap opens and how an app's questions are answered, as
/// effects the supervisor performs (HostLoop+Notifications.swift). Touched only on the host's
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
        /// It is active: a tap that opens the app reaches it.
        var isActive = false
        /// It runs past its launch, active, inactive or in the background (not suspended nor
        /// being suspended): a background action's response reaches it.
        var runs = false
        /// It is suspended: a background action's response waits for it to be run again.
        var isSuspended = false
    }

    /// A tap waiting for its app: the notification, the action and the text typed, and whether
    /// it waits for the app to be active (`.foreground`, the default action) or only running.
    struct Tap: Equatable {
        var request: WireNotificationRequest
        var action: String
        var userText: String?
        var foreground: Bool
    }

    /// What the host does for a tap (`tap(_:action:text:of:)`).
    enum TapOutcome: Equatable {
        /// Open the app (launching it if needed); the response waits for it to be active.
        case open
        /// Run the app in the background (launching or resuming it there); the response waits
        /// for it to run.
        case runInBackground
        /// Nothing reaches the app (a dismissal its category does not ask for).
        case nothing
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
        /// Resume the suspended app in the background: a background action's response waits.
        case wake(String)
    }

    private var apps: [String: AppNotifications]
    private let store: StateStore<[String: AppNotifications]>
    /// Taps waiting for their app, by bundle identifier (not kept: a tap is the user's, on this host).
    private var taps: [String: [Tap]] = [:]
    /// Notifications handed to an app's `willPresent` whose options it has not answered yet,
    /// by bundle identifier and notification identifier (not kept: the answer comes from this run).
    private var presenting: [String: [String: KeptNotification]] = [:]
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

    /// Removes the app's delivered notifications with these identifiers (nil: all); whether
    /// any were.
    @discardableResult
    func removeDelivered(_ identifiers: [String]?, for app: String) -> Bool {
        guard var kept = apps[app] else { return false }
        let before = kept.delivered.count
        kept.delivered.removeAll { identifiers?.contains($0.request.identifier) ?? true }
        apps[app] = kept
        guard kept.delivered.count != before else { return false }
        save()
        return true
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

    /// Keeps a notification in the app's Notification Center (delivered while the app was not
    /// in the foreground, or presented with `.list` or `.banner`; replacing one of its
    /// identifier), until it is tapped or removed.
    func keepDelivered(_ notification: KeptNotification, for app: String, at now: Double, presented: UInt? = nil) {
        var kept = apps[app, default: AppNotifications()]
        kept.delivered.removeAll { $0.request.identifier == notification.request.identifier }
        var delivered = notification
        delivered.deliveredAt = now
        delivered.presented = presented
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

    /// The app's Notification Center as `getDeliveredNotifications` lists it: newest first.
    func deliveredForApp(_ app: String) -> [WireDeliveredNotification] {
        delivered(of: app).reversed().map { WireDeliveredNotification(request: $0.request, date: $0.deliveredAt ?? $0.due) }
    }

    // MARK: Categories and presentation

    /// Keeps the app's categories (`setNotificationCategories`), which a tap's action is judged against.
    func setCategories(_ categories: [WireNotificationCategory], for app: String) {
        guard apps[app]?.categories != categories else { return }
        apps[app, default: AppNotifications()].categories = categories
        save()
    }

    func category(_ identifier: String, of app: String) -> WireNotificationCategory? {
        apps[app]?.categories?.first { $0.identifier == identifier }
    }

    /// The notification was handed to the app's `willPresent`: it waits for the options.
    func presenting(_ notification: KeptNotification, to app: String) {
        presenting[app, default: [:]][notification.request.identifier] = notification
    }

    /// The notification handed to `willPresent` whose options the app answered, taken.
    func takePresented(_ identifier: String, for app: String) -> KeptNotification? {
        presenting[app]?.removeValue(forKey: identifier)
    }

    // MARK: Taps

    /// The user taps the app's delivered notification `identifier` with `action` (nil: the
    /// default action, opening the app; `dismiss`; or one of its category's actions, `text` for
    /// a text-input one): it leaves Notification Center, and its response waits for the app
    /// (`ready`) unless it reaches none. Throws, changing nothing, what the user could not do.
    func tap(_ identifier: String, action: String? = nil, text: String? = nil, of app: App) throws(SupervisorError) -> TapOutcome {
        guard let kept = delivered(of: app.identifier).first(where: { $0.request.identifier == identifier }) else {
            let delivered = delivered(of: app.identifier).map(\.request.identifier)
            throw SupervisorError(
                "\(app.name) has no delivered notification \(identifier.debugDescription) (delivered: \(delivered.isEmpty ? "none" : delivered.joined(separator: ", ")))",
                code: .refused)
        }
        let tap = try Self.response(to: kept.request, action: action, text: text, category: category(kept.request.categoryIdentifier, of: app.identifier))
        removeDelivered([identifier], for: app.identifier)
        guard let tap else { return .nothing }
        taps[app.identifier, default: []].append(tap)
        return tap.foreground ? .open : .runInBackground
    }

    /// The app's response to a tap with `action` on `request` of `category`: nil for a dismissal
    /// the category does not ask for (`.customDismissAction`). Throws for an action the category
    /// does not have, or text for an action that takes none (or none for one that does).
    static func response(
        to request: WireNotificationRequest, action: String?, text: String?, category: WireNotificationCategory?
    ) throws(SupervisorError) -> Tap? {
        guard let action else {
            guard text == nil else { throw SupervisorError("--text needs a text-input action (the default action takes none)", code: .refused) }
            return Tap(request: request, action: "com.apple.UNNotificationDefaultActionIdentifier", foreground: true)
        }
        if action == "dismiss" {
            guard text == nil else { throw SupervisorError("--text needs a text-input action (dismiss takes none)", code: .refused) }
            guard category?.customDismissAction == true else { return nil }
            return Tap(request: request, action: "com.apple.UNNotificationDismissActionIdentifier", foreground: false)
        }
        let name = request.categoryIdentifier.isEmpty ? "no category" : "category \(request.categoryIdentifier.debugDescription)"
        guard let found = category?.actions.first(where: { $0.identifier == action }) else {
            let actions = (category?.actions.map(\.identifier) ?? []) + ["dismiss"]
            throw SupervisorError(
                "\(request.identifier.debugDescription) (\(name)) has no action \(action.debugDescription); its actions: \(actions.joined(separator: ", "))",
                code: .refused)
        }
        guard found.textInput == (text != nil) else {
            throw SupervisorError(found.textInput
                ? "\(action.debugDescription) is a text-input action: give the text with --text TEXT"
                : "--text needs a text-input action; \(action.debugDescription) takes none", code: .refused)
        }
        return Tap(request: request, action: action, userText: text, foreground: found.foreground)
    }

    /// Whether a background action's response waits for the app to run.
    func waitsToRun(_ app: String) -> Bool { taps[app]?.contains { !$0.foreground } ?? false }

    /// The taps the app can take now, taken: those that open it once it is active, the others
    /// once it runs; the rest keep waiting.
    func takeTaps(for app: App) -> [Tap] {
        guard let waiting = taps[app.identifier] else { return [] }
        let ready = waiting.filter { $0.foreground ? app.isActive : app.runs }
        let rest = waiting.filter { $0.foreground ? !app.isActive : !app.runs }
        taps[app.identifier] = rest.isEmpty ? nil : rest
        return ready
    }
}
