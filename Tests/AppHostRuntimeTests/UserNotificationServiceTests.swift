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
        notifications.keepDelivered(KeptNotification(request: request("b"), due: 900), for: app, at: 950)
        await withCheckedContinuation { kept in notifications.authorize(app, .denied) { kept.resume() } }
        let again = try service(path)
        #expect(again.loadWarning == nil)
        #expect(again.status(of: app) == "denied")
        #expect(again.pending(of: app).map(\.request.identifier) == ["a"])
        #expect(again.delivered(of: app).map(\.request.identifier) == ["b"])
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
        #expect(notifications.tap("a", for: app) == nil, "nothing delivered")
        notifications.keepDelivered(KeptNotification(request: request("a"), due: 5), for: app, at: 5)
        #expect(notifications.tap("a", for: app)?.identifier == "a")
        #expect(notifications.delivered(of: app).isEmpty)
        #expect(notifications.tap("a", for: app) == nil, "tapped once")
        #expect(notifications.takeTaps(for: app).map(\.identifier) == ["a"])
        #expect(notifications.takeTaps(for: app).isEmpty)
    }

    @Test func aDeviceTokenIs32BytesStablePerApp() {
        let token = UserNotificationService.deviceToken(for: app)
        #expect(token.count == 32)
        #expect(token == UserNotificationService.deviceToken(for: app))
        #expect(token != UserNotificationService.deviceToken(for: "com.example.other"))
    }
}
