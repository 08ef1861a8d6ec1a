import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// The host's notification center (UserNotificationService) on its own: authorization kept,
/// requests due on the scheduler's clock, the 64-request limit, taps, device tokens.
@Suite struct UserNotificationServiceTests {
    private let files = TemporaryFiles()
    private let app = "com.example.notes"

    private func service(_ path: String? = nil) throws -> UserNotificationService {
        UserNotificationService(store: StateStore(json: try path ?? files.url("notifications-\(UUID().uuidString).json").path, what: "the notifications"))
    }

    private func request(_ identifier: String, after seconds: Double? = nil, repeats: Bool = false) -> WireNotificationRequest {
        WireNotificationRequest(identifier: identifier, title: "Title \(identifier)", interval: seconds, repeats: repeats)
    }

    @Test func authorizationIsNotDeterminedUntilSetAndIsKept() async throws {
        let path = try files.url("kept.json").path
        let notifications = try service(path)
        #expect(notifications.authorization(of: app) == nil)
        #expect(notifications.status(of: app) == "notDetermined")
        await withCheckedContinuation { kept in notifications.authorize(app, .granted) { kept.resume() } }
        #expect(notifications.status(of: app) == "authorized")
        _ = notifications.add(request("a", after: 60), for: app, now: 1000)
        notifications.keepDelivered(KeptNotification(request: request("b"), due: 900), for: app, at: 950, presented: 1 << 3)
        let category = WireNotificationCategory(identifier: "c", actions: [.init(identifier: "reply", textInput: true)], customDismissAction: true)
        notifications.setCategories([category], for: app)
        await withCheckedContinuation { kept in notifications.authorize(app, .denied) { kept.resume() } }
        let again = try service(path)
        #expect(again.loadWarning == nil)
        #expect(again.status(of: app) == "denied")
        #expect(again.pending(of: app).map(\.request.identifier) == ["a"])
        #expect(again.delivered(of: app).map(\.request.identifier) == ["b"])
        #expect(again.delivered(of: app).first?.presented == 1 << 3)
        #expect(again.category("c", of: app) == category, "a tap after the app ended is judged against its categories")
    }

    @Test func aRequestIsDueAtItsTriggerOnTheClockAndOnce() throws {
        let notifications = try service()
        #expect(notifications.add(request("later", after: 90), for: app, now: 1000) == .added(due: 1090, dropped: nil))
        #expect(notifications.add(request("soon", after: 30), for: app, now: 1000) == .added(due: 1030, dropped: nil))
        #expect(notifications.add(request("now"), for: app, now: 1000) == .added(due: 1000, dropped: nil), "no trigger: due now")
        #expect(notifications.nextDue(installed: [app]) == 1000)
        #expect(notifications.takeDue(now: 1000, installed: [app]).map(\.notification.request.identifier) == ["now"])
        #expect(notifications.takeDue(now: 1029, installed: [app]).isEmpty)
        #expect(notifications.takeDue(now: 2000, installed: [app]).map(\.notification.request.identifier) == ["soon", "later"], "soonest first")
        #expect(notifications.takeDue(now: 3000, installed: [app]).isEmpty, "each once")
        #expect(notifications.nextDue(installed: [app]) == nil)
    }

    @Test func anAppThisHostDoesNotHaveKeepsItsRequests() throws {
        let notifications = try service()
        _ = notifications.add(request("elsewhere", after: 5), for: "com.example.other", now: 0)
        _ = notifications.add(request("here", after: 50), for: app, now: 0)
        #expect(notifications.nextDue(installed: [app]) == 50, "the other app's request sets no timer")
        #expect(notifications.takeDue(now: 100, installed: [app]).map(\.notification.request.identifier) == ["here"])
        #expect(notifications.pending(of: "com.example.other").map(\.request.identifier) == ["elsewhere"])
    }

    @Test func aRepeatingRequestStaysPendingAndAReplacedOneKeepsItsNewDate() throws {
        let notifications = try service()
        _ = notifications.add(request("tick", after: 60, repeats: true), for: app, now: 0)
        _ = notifications.add(request("once", after: 10), for: app, now: 0)
        _ = notifications.add(request("once", after: 500), for: app, now: 0)
        #expect(notifications.takeDue(now: 60, installed: [app]).map(\.notification.request.identifier) == ["tick"], "the replaced request is not due at 10")
        #expect(notifications.pending(of: app).map(\.due).sorted() == [120, 500])
    }

    @Test func anAppKeepsItsSoonest64Requests() throws {
        let notifications = try service()
        for index in 0..<64 { _ = notifications.add(request("n\(index)", after: Double(100 + index)), for: app, now: 0) }
        #expect(notifications.add(request("late", after: 1000), for: app, now: 0) == .added(due: 1000, dropped: "late"))
        #expect(notifications.add(request("early", after: 1), for: app, now: 0) == .added(due: 1, dropped: "n63"))
        #expect(notifications.pending(of: app).count == 64)
        #expect(notifications.add(request("other"), for: "com.example.other", now: 0) == .added(due: 0, dropped: nil), "per app")
    }

    @Test func removingPendingRequestsKeepsOthersAndAllRemovesAll() throws {
        let notifications = try service()
        for name in ["a", "b", "c"] { _ = notifications.add(request(name, after: 10), for: app, now: 0) }
        #expect(notifications.removePending(["b", "missing"], for: app) == ["b"])
        #expect(notifications.pending(of: app).map(\.request.identifier) == ["a", "c"])
        #expect(notifications.removePending(nil, for: app) == ["a", "c"])
        #expect(notifications.takeDue(now: 100, installed: [app]).isEmpty)
    }

    @Test func aCalendarTriggerIsDueAtTheNextMatchingDateInUTC() throws {
        // 2026-01-01T00:00:00Z; the next 09:30 is that morning.
        let now = 1_767_225_600.0
        var morning = request("morning")
        morning.calendar = ["hour": 9, "minute": 30]
        #expect(UserNotificationService.firstDue(of: morning, after: now) == now + 9.5 * 3600)
        #expect(UserNotificationService.firstDue(of: morning, after: now + 10 * 3600) == now + 33.5 * 3600, "past it: the next morning")
    }

    @Test func aTapTakesTheDeliveredNotificationAndWaitsForTheApp() throws {
        let notifications = try service()
        #expect(throws: SupervisorError.self, "nothing delivered") { try notifications.tap("a", of: notes()) }
        notifications.keepDelivered(KeptNotification(request: request("a"), due: 5), for: app, at: 5)
        #expect(try notifications.tap("a", of: notes()) == .open)
        #expect(notifications.delivered(of: app).isEmpty)
        #expect(throws: SupervisorError.self, "tapped once") { try notifications.tap("a", of: notes()) }
        #expect(notifications.takeTaps(for: notes(runs: true)).isEmpty, "the default action waits for the app to be active")
        #expect(notifications.takeTaps(for: notes(active: true)).map(\.request.identifier) == ["a"])
        #expect(notifications.takeTaps(for: notes(active: true)).isEmpty)
    }

    @Test func aDeviceTokenIs32BytesStablePerApp() {
        let token = UserNotificationService.deviceToken(for: app)
        #expect(token.count == 32)
        #expect(token == UserNotificationService.deviceToken(for: app))
        #expect(token != UserNotificationService.deviceToken(for: "com.example.other"))
    }

    // MARK: Rules

    private func notes(live: Bool = true, presents: Bool = false, active: Bool = false, runs: Bool = false, suspended: Bool = false) -> UserNotificationService.App {
        UserNotificationService.App(
            identifier: app, name: "Notes", isLive: live, presents: presents, isActive: active, runs: runs || active, isSuspended: suspended)
    }

    @Test func aDueNotificationIsPresentedInTheForegroundElseKeptDeliveredAndNeverShownUngranted() throws {
        let notifications = try service()
        _ = notifications.add(request("a", after: 10), for: app, now: 0)
        let ungranted = notifications.deliverDue(now: 10, apps: [notes()])
        #expect(ungranted.delivered.isEmpty)
        #expect(ungranted.effects == [.event(app, "\"a\" due, not shown: notifications are notDetermined for the app")])
        #expect(notifications.delivered(of: app).isEmpty)
        notifications.authorize(app, .granted) {}
        _ = notifications.add(request("b", after: 10), for: app, now: 0)
        let presented = notifications.deliverDue(now: 10, apps: [notes(presents: true)])
        #expect(presented.delivered == ["notification Notes b"])
        #expect(presented.effects == [.send(app, .present(request("b", after: 10))), .event(app, "\"b\" presented to the app in the foreground (willPresent)")])
        #expect(notifications.delivered(of: app).isEmpty, "presented: not kept")
        _ = notifications.add(request("c", after: 10), for: app, now: 0)
        let kept = notifications.deliverDue(now: 10, apps: [notes(live: false)])
        #expect(kept.effects == [.event(app, "\"c\" delivered: \"Title c\" (tap-notification Notes c opens it)")])
        #expect(notifications.delivered(of: app).map(\.request.identifier) == ["c"])
        #expect(notifications.delivered(of: app).first?.deliveredAt == 10)
        // An app not given (not installed here) keeps its requests.
        _ = notifications.add(request("d", after: 10), for: app, now: 0)
        #expect(notifications.deliverDue(now: 10, apps: []).effects.isEmpty)
        #expect(notifications.pending(of: app).map(\.request.identifier) == ["d"])
    }

    @Test func theTimerIsSetOnTheHostsClockForTheSchedulersDate() throws {
        let notifications = try service()
        let now = HostInstant(nanoseconds: 5_000_000_000)
        #expect(notifications.nextDeadline(now: now, schedulerNow: 1000, installed: [app]) == nil)
        _ = notifications.add(request("a", after: 30), for: app, now: 1000)
        #expect(notifications.nextDeadline(now: now, schedulerNow: 1000, installed: [app]) == now + .seconds(30))
        #expect(notifications.nextDeadline(now: now, schedulerNow: 2000, installed: [app]) == now, "overdue: now")
        #expect(notifications.nextDeadline(now: now, schedulerNow: 1000, installed: []) == nil)
    }

    @Test func theAppsQuestionsAreAnswered() throws {
        let notifications = try service()
        #expect(notifications.answer(.requestAuthorization, from: notes(), now: 0, textLimit: 8) == [
            .event(app, "asked for authorization; it is notDetermined (answer with authorize Notes notifications granted|denied)"),
        ], "waits for the host's setting")
        #expect(notifications.answer(.settings, from: notes(), now: 0, textLimit: 8) == [.send(app, .authorization("notDetermined"))])
        notifications.authorize(app, .denied) {}
        #expect(notifications.answer(.requestAuthorization, from: notes(), now: 0, textLimit: 8) == [
            .send(app, .authorization("denied")), .event(app, "asked for authorization; it is denied"),
        ])
        let token = UserNotificationService.deviceToken(for: app)
        #expect(notifications.answer(.registerForRemoteNotifications, from: notes(), now: 0, textLimit: 8).first == .send(app, .deviceToken(token)))
    }

    @Test func aRequestIsCutToTheLimitAndOneNeverDueIsRefused() throws {
        let notifications = try service()
        var long = request("a", after: 60)
        long.title = String(repeating: "t", count: 20)
        let added = notifications.answer(.add(long), from: notes(), now: 1000, textLimit: 8)
        #expect(added.last == .deliverDue)
        #expect(notifications.pending(of: app).map(\.request.title) == ["tttttttt [cut at 8 bytes]"])
        #expect(notifications.pending(of: app).map(\.due) == [1060])
        #expect(notifications.answer(.add(request("zero", after: 0)), from: notes(), now: 1000, textLimit: 8) == [
            .warning(app, "notification request \"zero\" refused: its time interval must be greater than 0"),
        ])
        #expect(notifications.pending(of: app).count == 1)
        #expect(notifications.answer(.removePending(nil), from: notes(), now: 1000, textLimit: 8) == [.event(app, "removed pending \"a\"")])
        #expect(notifications.pending(of: app).isEmpty)
    }

    @Test func aKeptAuthorizationIsToldToARunningAppOnly() throws {
        let notifications = try service()
        notifications.authorize(app, .granted) {}
        #expect(notifications.authorizationKept(.granted, for: notes()) == [.send(app, .authorization("authorized")), .event(app, "authorization granted")])
        #expect(notifications.authorizationKept(.granted, for: notes(live: false)) == [.event(app, "authorization granted")])
        #expect(notifications.authorizationKept(.denied, for: notes()).isEmpty, "changed meanwhile")
    }

    @Test func aTapReachesTheAppWhenItBecomesActiveOnce() throws {
        let notifications = try service()
        notifications.keepDelivered(KeptNotification(request: request("a"), due: 5), for: app, at: 5)
        #expect(notifications.ready(notes(active: true)).isEmpty, "not tapped")
        #expect(throws: SupervisorError.self, "not delivered") { try notifications.tapped("b", action: nil, text: nil, of: notes()) }
        let (outcome, effects) = try notifications.tapped("a", action: nil, text: nil, of: notes())
        #expect(outcome == .open)
        #expect(effects == [.send(app, .delivered([]))], "a running app is told its Notification Center changed")
        #expect(notifications.ready(notes(runs: true)).isEmpty, "in the background: not yet")
        #expect(notifications.ready(notes(active: true)) == [
            .send(app, .respond(request("a"), action: "com.apple.UNNotificationDefaultActionIdentifier")),
            .event(app, "\"a\" opened by the user (didReceive)"),
        ])
        #expect(notifications.ready(notes(active: true)).isEmpty, "once")
    }

    @Test func theListingIsPendingByDueTimeThenDelivered() throws {
        let notifications = try service()
        _ = notifications.add(request("later", after: 90), for: app, now: 0)
        _ = notifications.add(request("soon", after: 30), for: app, now: 0)
        notifications.keepDelivered(KeptNotification(request: request("old"), due: 5), for: app, at: 5)
        let listed = notifications.listing([notes()])
        #expect(listed.map(\.identifier) == ["soon", "later", "old"])
        #expect(listed.map(\.state) == ["pending", "pending", "delivered"])
        #expect(notifications.listing([]).isEmpty)
    }

    // MARK: Presentation, actions, Notification Center

    /// Presents the due request `identifier` to the app in the foreground at `now`.
    private func present(_ notifications: UserNotificationService, _ identifier: String, at now: Double) {
        _ = notifications.add(request(identifier), for: app, now: now)
        _ = notifications.deliverDue(now: now, apps: [notes(presents: true)])
    }

    @Test func willPresentsOptionsDecideWhetherItStaysInNotificationCenter() throws {
        let notifications = try service()
        notifications.authorize(app, .granted) {}
        present(notifications, "banner", at: 100)
        present(notifications, "quiet", at: 110)
        present(notifications, "listed", at: 120)
        #expect(notifications.delivered(of: app).isEmpty, "nothing listed before the app answers")
        let banner = notifications.answer(.presented(identifier: "banner", options: 1 << 4 | 1 << 1), from: notes(presents: true), now: 105, textLimit: 64)
        #expect(banner == [
            .send(app, .delivered([WireDeliveredNotification(request: request("banner"), date: 100)])),
            .event(app, "\"banner\" presented with [sound, banner]: in Notification Center (tap-notification Notes banner opens it)"),
        ], "listed with the date it was presented, not answered")
        #expect(notifications.answer(.presented(identifier: "quiet", options: 0), from: notes(presents: true), now: 111, textLimit: 64) == [
            .event(app, "\"quiet\" presented with []: not shown, not in Notification Center"),
        ])
        _ = notifications.answer(.presented(identifier: "listed", options: 1 << 3), from: notes(presents: true), now: 121, textLimit: 64)
        #expect(notifications.answer(.presented(identifier: "listed", options: 1 << 4), from: notes(presents: true), now: 122, textLimit: 64).isEmpty, "the first answer counts")
        #expect(notifications.answer(.presented(identifier: "never", options: 1 << 4), from: notes(presents: true), now: 122, textLimit: 64).isEmpty)
        #expect(notifications.delivered(of: app).map(\.request.identifier) == ["banner", "listed"])
        #expect(notifications.listing([notes()]).map(\.presented) == [["sound", "banner"], ["list"]])
        #expect(try notifications.tap("listed", of: notes()) == .open, "tappable")
        #expect(throws: SupervisorError.self, "not listed: not tappable") { try notifications.tap("quiet", of: notes()) }
    }

    @Test func anActionIsOneOfItsCategorysAsTheAppRegisteredIt() throws {
        let notifications = try service()
        let categories = [
            WireNotificationCategory(identifier: "message", actions: [
                .init(identifier: "reply", textInput: true), .init(identifier: "open", foreground: true), .init(identifier: "mark"),
            ]),
            WireNotificationCategory(identifier: "alarm", actions: [.init(identifier: "snooze")], customDismissAction: true),
        ]
        #expect(notifications.answer(.categories(categories), from: notes(), now: 0, textLimit: 64).isEmpty)
        func deliver(_ identifier: String, _ category: String) -> WireNotificationRequest {
            var made = request(identifier)
            made.categoryIdentifier = category
            notifications.keepDelivered(KeptNotification(request: made, due: 5), for: app, at: 5)
            return made
        }
        let message = deliver("m", "message")
        #expect {
            try notifications.tap("m", action: "archive", of: notes())
        } throws: { ($0 as? SupervisorError)?.message == "\"m\" (category \"message\") has no action \"archive\"; its actions: reply, open, mark, dismiss" }
        #expect(throws: SupervisorError.self, "a text-input action needs --text") { try notifications.tap("m", action: "reply", of: notes()) }
        #expect(throws: SupervisorError.self, "--text only for a text-input action") { try notifications.tap("m", action: "mark", text: "hi", of: notes()) }
        #expect(notifications.delivered(of: app).count == 1, "a refused tap changes nothing")
        #expect(try notifications.tap("m", action: "reply", text: "On my way", of: notes()) == .runInBackground)
        #expect(notifications.ready(notes(live: true)).isEmpty, "launching or being suspended: waits")
        #expect(notifications.ready(notes(suspended: true)) == [.wake(app)], "suspended: woken for it")
        #expect(notifications.ready(notes(runs: true)) == [
            .send(app, .respond(message, action: "reply", userText: "On my way")),
            .event(app, "\"m\" answered with \"reply\", text \"On my way\" in the background (didReceive)"),
        ])
        _ = deliver("m2", "message")
        #expect(try notifications.tap("m2", action: "open", of: notes()) == .open, ".foreground opens the app")
        #expect(notifications.ready(notes(runs: true)).isEmpty)
        #expect(notifications.ready(notes(suspended: true)).isEmpty, "a foreground action is not run in the background")
        #expect(notifications.ready(notes(active: true)).count == 2)
        _ = deliver("plain", "")
        #expect(throws: SupervisorError.self, "no category: only dismiss") { try notifications.tap("plain", action: "mark", of: notes()) }
        #expect(try notifications.tap("plain", action: "dismiss", of: notes()) == .nothing, "no .customDismissAction: the app is not told")
        #expect(notifications.delivered(of: app).isEmpty, "but it is gone")
        let alarm = deliver("a", "alarm")
        #expect(try notifications.tap("a", action: "dismiss", of: notes()) == .runInBackground)
        #expect(notifications.ready(notes(runs: true)) == [
            .send(app, .respond(alarm, action: "com.apple.UNNotificationDismissActionIdentifier")),
            .event(app, "\"a\" dismissed by the user (didReceive)"),
        ])
    }

    @Test func notificationCenterIsNewestFirstAndARunningAppIsToldOfChanges() throws {
        let notifications = try service()
        notifications.authorize(app, .granted) {}
        _ = notifications.add(request("first", after: 10), for: app, now: 0)
        _ = notifications.add(request("second", after: 20), for: app, now: 0)
        #expect(notifications.deliverDue(now: 10, apps: [notes(live: false)]).effects.count == 1, "not running: no one to tell")
        let running = notifications.deliverDue(now: 20, apps: [notes()])
        let both = [WireDeliveredNotification(request: request("second", after: 20), date: 20), WireDeliveredNotification(request: request("first", after: 10), date: 10)]
        #expect(running.effects.first == .send(app, .delivered(both)))
        #expect(notifications.deliveredForApp(app) == both)
        #expect(notifications.answer(.removeDelivered(["first"]), from: notes(), now: 30, textLimit: 64) == [.send(app, .delivered([both[0]]))])
        #expect(notifications.answer(.removeDelivered(["first"]), from: notes(), now: 30, textLimit: 64).isEmpty, "nothing changed")
        #expect(notifications.answer(.removeDelivered(nil), from: notes(), now: 30, textLimit: 64) == [.send(app, .delivered([]))])
        #expect(notifications.listing([notes()]).isEmpty)
    }
}
