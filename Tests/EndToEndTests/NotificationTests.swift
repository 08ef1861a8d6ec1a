import Foundation
import Testing

/// UserNotifications against real app processes (docs/porting.md, "Porting iOS code"): authorization
/// is the host's setting, which a request waits for; requests are kept by the host and delivered
/// on the scheduler's clock, presented in the foreground or kept as delivered; a tap opens (or
/// launches) the app with didReceive; registration hands out a device token. The Probe's
/// NotificationProbes.swift lists its behaviours.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct NotificationTests {
    func notificationEvents(_ host: HostSession, _ name: String) -> [String] {
        host.allEvents.filter { $0.name == name && $0.event == "notification" }.compactMap(\.detail)
    }

    @Test func authorizationWaitsForTheHostsSettingWhichIsKept() throws {
        let scratch = try Scratch()
        let noter = try scratch.bundle("Noter", behavior: ["notifications": ["request": true]])
        let refuser = try scratch.bundle("Refuser", behavior: ["notifications": ["request": true]])
        let first = try HostSession([noter, refuser], scratch: scratch)
        try first.waitFor("Noter", "didBecomeActive")
        let asked = try first.waitFor("Noter asks") { $0.name == "Noter" && $0.event == "notification" && $0.detail?.hasPrefix("asked") == true }
        #expect(asked.detail == "asked for authorization; it is notDetermined (answer with authorize Noter notifications granted|denied)")
        first.send("ps")
        try first.waitFor("ps of Noter") { $0.event == "ps" && $0.name == "Noter" }
        #expect(!scratch.recorded("Noter", settle: false).contains { $0.hasPrefix("notification") }, "the completion waits for the host")
        first.send("authorize Noter notifications granted")
        try scratch.waitForRecorded("Noter", "notification authorization granted=true")
        try scratch.waitForRecorded("Noter", "notification settings 2")  // UNAuthorizationStatus.authorized
        // Set before the app asks: answered at once.
        first.send("authorize Refuser notifications denied")
        first.send("open Refuser")
        try scratch.waitForRecorded("Refuser", "notification authorization granted=false")
        try scratch.waitForRecorded("Refuser", "notification settings 1")  // denied
        try first.waitFor("Refuser's answer") { $0.name == "Refuser" && $0.detail == "asked for authorization; it is denied" }
        first.closeInput()
        _ = try first.waitForExit()
        #expect(FileManager.default.fileExists(atPath: scratch.stateDirectory.appendingPathComponent("notifications.json").path))

        // The next host keeps the setting: the request is answered at once.
        let host = try HostSession([noter], scratch: scratch)
        try host.waitFor("Noter", "didBecomeActive")
        try waitUntil("Noter's second answer") { scratch.recorded("Noter", settle: false).filter { $0 == "notification settings 2" }.count == 2 }
        #expect(scratch.recorded("Noter").filter { $0.hasPrefix("notification authorization") } == [
            "notification authorization granted=true", "notification authorization granted=true",
        ])
        try host.waitFor("answered at once") { $0.name == "Noter" && $0.detail == "asked for authorization; it is granted" }
    }

    @Test func requestsAreDeliveredOnTheClockAndATapLaunchesTheApp() throws {
        let scratch = try Scratch()
        let noter = try scratch.bundle("Noter", behavior: ["notifications": [
            "add": [
                ["id": "front", "title": "Front", "after": 30.0], ["id": "soon", "title": "Tea\u{1b}[31m", "after": 60.0],
                ["id": "gone", "title": "Gone", "after": 90.0], ["id": "later", "title": "Later", "after": 3600.0],
            ],
            "remove": ["gone"],
        ]])
        let host = try HostSession([noter], scratch: scratch)
        try host.waitFor("Noter", "didBecomeActive")
        try host.waitFor("removal") { $0.name == "Noter" && $0.detail == "removed pending \"gone\"" }
        host.send("authorize Noter notifications granted")
        host.send("advance 30")
        try scratch.waitForRecorded("Noter", "willPresent front active main=true")
        try host.waitFor("presented") { $0.name == "Noter" && $0.detail == "\"front\" presented to the app in the foreground (willPresent)" }
        host.send("home")
        try host.waitFor("Noter", "suspended")
        host.send("advance 70")
        let delivered = try host.waitFor("delivery") { $0.name == "Noter" && $0.detail?.hasPrefix("\"soon\" delivered") == true }
        #expect(delivered.detail == "\"soon\" delivered: \"Tea\\u{1B}[31m\" (tap-notification Noter soon opens it)")
        host.send("notifications")
        host.send("ps")
        try host.waitFor("ps of Noter") { $0.event == "ps" && $0.name == "Noter" }
        let listed = host.allEvents.filter { $0.event == "notificationListing" }
        #expect(listed.map { "\($0.fields["identifier"] ?? "") \($0.fields["state"] ?? "") \($0.fields["title"] ?? "")" } == [
            "later pending Later", "front delivered Front", "soon delivered Tea\u{1b}[31m",
        ], "front was presented with .banner: it stays in Notification Center")
        #expect(!notificationEvents(host, "Noter").contains { $0.contains("\"gone\"") && !$0.hasPrefix("kept") && !$0.hasPrefix("removed") }, "removed: never due")
        #expect(!scratch.recorded("Noter").contains { $0.hasPrefix("willPresent soon") || $0.hasPrefix("didReceive") }, "a suspended app hears nothing")

        host.send("tap-notification Noter nothing")
        try host.waitForStandardError(containing: "Noter has no delivered notification \"nothing\" (delivered: front, soon)")
        host.send("terminate Noter")
        try host.waitFor("Noter", "terminated")
        host.send("tap-notification Noter soon")
        try scratch.waitForRecorded("Noter", "didReceive soon com.apple.UNNotificationDefaultActionIdentifier active userInfo=soon")
        try host.waitFor("opened") { $0.name == "Noter" && $0.detail == "\"soon\" opened by the user (didReceive)" }
        let log = scratch.recorded("Noter")
        let opened = try #require(log.firstIndex { $0.hasPrefix("didReceive") })
        #expect(log[..<opened].last { $0.hasPrefix("didBecomeActive") } != nil && log.filter { $0.hasPrefix("launch reason=") }.count == 2, "launched, then told once active")
        host.send("tap-notification Noter soon")
        try host.waitForStandardError(containing: "Noter has no delivered notification \"soon\"")
    }

    @Test func anAppNotAuthorizedHasNothingShownAndATapResumesASuspendedApp() throws {
        let scratch = try Scratch()
        let behavior: [String: Any] = ["notifications": ["add": [["id": "ping", "title": "Ping", "after": 10.0]]]]
        let loud = try scratch.bundle("Loud", behavior: behavior)
        let quiet = try scratch.bundle("Quiet", behavior: behavior)
        let host = try HostSession([loud, quiet], scratch: scratch)
        try host.waitFor("Loud", "didBecomeActive")
        host.send("authorize Loud notifications granted")
        host.send("open Quiet")
        try host.waitFor("Quiet", "didBecomeActive")
        try host.waitFor("Quiet's request") { $0.name == "Quiet" && $0.detail?.hasPrefix("kept \"ping\"") == true }
        host.send("home")
        try host.waitFor("Quiet", "suspended")
        try host.waitFor("Loud", "suspended")
        host.send("advance 20")
        try host.waitFor("Quiet's drop") { $0.name == "Quiet" && $0.detail == "\"ping\" due, not shown: notifications are notDetermined for the app" }
        try host.waitFor("Loud's delivery") { $0.name == "Loud" && $0.detail?.hasPrefix("\"ping\" delivered") == true }
        host.send("tap-notification Quiet ping")
        try host.waitForStandardError(containing: "Quiet has no delivered notification \"ping\" (delivered: none)")

        let resumed = host.allEvents.filter { $0.name == "Loud" && $0.event == "resumed" }.count
        host.send("tap-notification Loud ping")
        try scratch.waitForRecorded("Loud", "didReceive ping com.apple.UNNotificationDefaultActionIdentifier active userInfo=ping")
        try host.waitFor("Loud", "resumed", occurrence: resumed + 1)
        #expect(scratch.recorded("Loud").filter { $0.hasPrefix("launch reason=") }.count == 1, "resumed, not launched again")
        #expect(!scratch.recorded("Quiet").contains { $0.hasPrefix("willPresent") || $0.hasPrefix("didReceive") })
    }

    @Test func theNotificationsTableEscapesWhatTheAppWrote() throws {
        let scratch = try Scratch()
        let lister = try scratch.bundle("Lister", behavior: ["notifications": ["add": [["id": "tea", "title": "Tea\u{1b}time", "after": 3600.0]]]])
        let host = try HostSession([lister], scratch: scratch)
        let kept = try host.waitFor("kept") { $0.name == "Lister" && $0.detail?.hasPrefix("kept \"tea\", due ") == true }
        let due = String(try #require(kept.detail).dropFirst("kept \"tea\", due ".count))
        host.closeInput()
        _ = try host.waitForExit()

        let quiet = try scratch.bundle("Lister", behavior: [:])
        let script = scratch.url.appendingPathComponent("script")
        try Data("notifications\n".utf8).write(to: script)
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, quiet.path])
        #expect(result.status == 0)
        let rows = result.output.split(separator: "\n").map { $0.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) } }
        let header = try #require(rows.firstIndex { $0.first == "APP" })
        #expect(rows[header] == ["APP", "IDENTIFIER", "TITLE", "DUE", "STATE"])
        #expect(rows[header + 1] == ["Lister", "tea", "Tea\\etime", due, "pending"])
    }

    @Test func registeringHandsEachAppItsOwnStableDeviceToken() throws {
        let scratch = try Scratch()
        let alpha = try scratch.bundle("Alpha", behavior: ["notifications": ["register": true]])
        let beta = try scratch.bundle("Beta", behavior: ["notifications": ["register": true]])
        let host = try HostSession([alpha, beta], scratch: scratch)
        func tokens(_ name: String) -> [String] {
            scratch.recorded(name, settle: false).filter { $0.hasPrefix("deviceToken ") }
        }
        try waitUntil("Alpha's token") { tokens("Alpha").count == 1 }
        host.send("open Beta")
        try waitUntil("Beta's token") { tokens("Beta").count == 1 }
        host.send("terminate Alpha")
        try host.waitFor("Alpha", "terminated")
        host.send("open Alpha")
        try waitUntil("Alpha's second token") { tokens("Alpha").count == 2 }
        let token = try #require(tokens("Alpha").first?.split(separator: " ").dropFirst().first.map(String.init))
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit), "32 bytes")
        #expect(tokens("Alpha") == ["deviceToken \(token) registered=true", "deviceToken \(token) registered=true"], "the same at every launch")
        #expect(tokens("Beta") != ["deviceToken \(token) registered=true"], "each app its own")
        try host.waitFor("the token's event") { $0.name == "Alpha" && $0.detail == "registered for remote notifications: device token \(token)" }
    }
}
