import Foundation
import Testing

/// What issue 39 left of UserNotifications, against real app processes: willPresent's options
/// decide whether a notification stays in Notification Center; a tap may answer with one of
/// the category's actions (text input, background or foreground) or dismiss it; and
/// getDeliveredNotifications lists Notification Center, newest first, at launch and as it
/// changes. The Probe's NotificationProbes.swift lists its behaviours.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct NotificationActionTests {
    func detail(_ host: HostSession, _ name: String, _ prefix: String) throws -> String {
        let event = try host.waitFor("\(name): \(prefix)") { $0.name == name && $0.event == "notification" && $0.detail?.hasPrefix(prefix) == true }
        return try #require(event.detail)
    }

    /// The `notifications` listing, one "NAME IDENTIFIER STATE [OPTIONS]" a line.
    func listing(_ host: HostSession) throws -> [String] {
        let start = host.allEvents.count
        let answered = host.allEvents.filter { $0.event == "ps" }.count
        host.send("notifications")
        host.send("ps")
        try host.waitFor("ps after the listing", occurrence: answered + 1) { $0.event == "ps" }
        return host.allEvents.dropFirst(start).filter { $0.event == "notificationListing" }.map { listed in
            "\(listed.fields["name"] as? String ?? "") \(listed.fields["identifier"] as? String ?? "") \(listed.fields["state"] as? String ?? "")"
                + ((listed.fields["presented"] as? [String]).map { " [\($0.joined(separator: ","))]" } ?? "")
        }
    }

    @Test func willPresentsOptionsDecideWhatStaysInNotificationCenter() throws {
        let scratch = try Scratch()
        let request: [String: Any] = ["add": [["id": "hello", "title": "Hello", "after": 10.0]]]
        let shower = try scratch.bundle("Shower", behavior: ["notifications": request.merging(["present": ["list", "sound"]]) { $1 }])
        let hider = try scratch.bundle("Hider", behavior: ["notifications": request.merging(["present": [String]()]) { $1 }])
        let host = try HostSession([shower, hider], scratch: scratch)
        try host.waitFor("Shower", "didBecomeActive")
        _ = try detail(host, "Shower", "kept \"hello\"")
        host.send("authorize Shower notifications granted")
        host.send("authorize Hider notifications granted")
        host.send("advance 10")
        try scratch.waitForRecorded("Shower", "willPresent hello active main=true")
        #expect(try detail(host, "Shower", "\"hello\" presented with") == "\"hello\" presented with [sound, list]: in Notification Center (tap-notification Shower hello opens it)")
        host.send("open Hider")
        try host.waitFor("Hider", "didBecomeActive")
        _ = try detail(host, "Hider", "kept \"hello\"")
        host.send("advance 10")
        try scratch.waitForRecorded("Hider", "willPresent hello active main=true")
        #expect(try detail(host, "Hider", "\"hello\" presented with") == "\"hello\" presented with []: not shown, not in Notification Center")
        #expect(try listing(host) == ["Shower hello delivered [sound,list]"], "presented with []: not listed")
        host.send("tap-notification Hider hello")
        try host.waitForStandardError(containing: "Hider has no delivered notification \"hello\" (delivered: none)")
        host.send("tap-notification Shower hello")
        try scratch.waitForRecorded("Shower", "didReceive hello com.apple.UNNotificationDefaultActionIdentifier active userInfo=hello")
    }

    @Test func aTapAnswersWithAnActionOfTheCategoryTheAppRegistered() throws {
        let scratch = try Scratch()
        let messages = ["m1", "m2", "m3", "m4"].map { ["id": $0, "title": $0, "after": 10.0, "category": "message"] as [String: Any] }
        let chat = try scratch.bundle("Chat", behavior: ["notifications": [
            "categories": [
                ["id": "message", "actions": [["id": "reply", "text": true], ["id": "open", "foreground": true], ["id": "mark"]]],
                ["id": "alarm", "customDismiss": true, "actions": [["id": "snooze"]]],
            ],
            "add": messages + [["id": "a1", "title": "Wake", "after": 10.0, "category": "alarm"]],
        ]])
        let host = try HostSession([chat], scratch: scratch)
        try host.waitFor("Chat", "didBecomeActive")
        _ = try detail(host, "Chat", "kept \"a1\"")
        host.send("authorize Chat notifications granted")
        host.send("home")
        try host.waitFor("Chat", "suspended")
        host.send("advance 10")
        _ = try detail(host, "Chat", "\"a1\" delivered")
        host.send("tap-notification Chat m1 archive")
        try host.waitForStandardError(containing: "\"m1\" (category \"message\") has no action \"archive\"; its actions: reply, open, mark, dismiss")
        host.send("tap-notification Chat m1 reply")
        try host.waitForStandardError(containing: "\"reply\" is a text-input action: give the text with --text TEXT")

        // Not running: a background action launches the app into the background for it.
        host.send("terminate Chat")
        try host.waitFor("Chat", "terminated")
        host.send("tap-notification Chat m1 reply --text On my way")
        try scratch.waitForRecorded("Chat", "didReceive m1 reply background userInfo=m1 text=On my way")
        #expect(try detail(host, "Chat", "\"m1\" answered") == "\"m1\" answered with \"reply\", text \"On my way\" in the background (didReceive)")
        #expect(scratch.recorded("Chat").filter { $0.hasPrefix("launch reason=") }.last?.hasPrefix("launch reason=background ") == true)
        // Running in the background or suspended: run there again.
        host.send("tap-notification Chat m2 mark")
        try scratch.waitForRecorded("Chat", "didReceive m2 mark background userInfo=m2")
        // A custom dismissal reaches the app; a dismissal its category does not ask for does not.
        host.send("tap-notification Chat a1 dismiss")
        try scratch.waitForRecorded("Chat", "didReceive a1 com.apple.UNNotificationDismissActionIdentifier background userInfo=a1")
        host.send("tap-notification Chat m3 dismiss")
        #expect(try detail(host, "Chat", "\"m3\" dismissed") == "\"m3\" dismissed by the user")
        // A .foreground action opens the app.
        let activations = scratch.recorded("Chat", settle: false).filter { $0.hasPrefix("didBecomeActive") }.count
        host.send("tap-notification Chat m4 open")
        try scratch.waitForRecorded("Chat", "didReceive m4 open active userInfo=m4")
        let log = scratch.recorded("Chat")
        #expect(log.filter { $0.hasPrefix("didBecomeActive") }.count == activations + 1, "opened once, for m4 only")
        #expect(!log.contains { $0.hasPrefix("didReceive m3") })
        #expect(try listing(host).filter { !$0.hasSuffix(" pending") } == [], "each tap took its notification (the relaunches added the requests again)")
    }

    @Test func getDeliveredNotificationsListsNotificationCenterNewestFirst() throws {
        let scratch = try Scratch()
        let keeper = try scratch.bundle("Keeper", behavior: ["notifications": [
            "add": [["id": "d1", "title": "One", "after": 10.0], ["id": "d2", "title": "Two", "after": 20.0], ["id": "d3", "title": "Three", "after": 30.0]],
            "listDelivered": true,
            "removeDelivered": ["d2"],
        ]])
        let host = try HostSession([keeper], scratch: scratch)
        try host.waitFor("Keeper", "didBecomeActive")
        _ = try detail(host, "Keeper", "kept \"d3\"")
        try scratch.waitForRecorded("Keeper", "delivered didFinishLaunching  newestFirst=true")
        host.send("authorize Keeper notifications granted")
        host.send("home")
        try host.waitFor("Keeper", "suspended")
        for (seconds, identifier) in [(10, "d1"), (10, "d2"), (10, "d3")] {
            host.send("advance \(seconds)")
            _ = try detail(host, "Keeper", "\"\(identifier)\" delivered")
        }
        host.send("terminate Keeper")
        try host.waitFor("Keeper", "terminated")
        host.send("open Keeper")
        // At launch, in its configuration; then it removes d2 and the host's list follows.
        try scratch.waitForRecorded("Keeper", "delivered didFinishLaunching d3,d2,d1 newestFirst=true")
        try scratch.waitForRecorded("Keeper", "delivered didBecomeActive d3,d1 newestFirst=true")
        try waitUntil("the host removes d2") { (try? listing(host))?.filter { !$0.hasSuffix(" pending") } == ["Keeper d1 delivered", "Keeper d3 delivered"] }
        // A tap takes the tapped one, and the running app hears it before didReceive.
        host.send("tap-notification Keeper d3")
        try scratch.waitForRecorded("Keeper", "didReceive d3 com.apple.UNNotificationDefaultActionIdentifier active userInfo=d3")
        try scratch.waitForRecorded("Keeper", "delivered didReceive d1 newestFirst=true")
    }
}
