import Foundation
import Testing
@testable import AppHostRuntime

/// The run's journal keeps every life-cycle event however much an app logs (EventJournal).
struct EventJournalTests {
    func journal() throws -> (EventJournal, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-test-\(UUID().uuidString)")
        // A journal of 640 KiB: its app shares are 80 KiB each and 480 KiB in all.
        return (try EventJournal(stateDirectory: directory, limits: (640 << 10, 80 << 10, 480 << 10)), directory)
    }

    func log(_ app: String, _ index: Int) -> HostEvent {
        HostEvent(time: Date(), app: "test.\(app.lowercased())", name: app, event: .log, detail: "\(index) " + String(repeating: "x", count: 1000))
    }

    /// One app logging past its share is cut off with one line saying so; another app's
    /// termination, after it, is still recorded.
    @Test func anAppThatLogsPastItsShareLeavesTheLifeCycleRecorded() throws {
        let (journal, directory) = try journal()
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = (80 << 10) / 1000 + 20
        for index in 0..<count { journal.record(log("Chatty", index)) }
        journal.record(HostEvent(time: Date(), app: "test.quiet", name: "Quiet", event: .terminated, detail: "ended"))
        journal.record(log("Quiet", 0))
        journal.close()
        let events = try EventJournal.events(in: journal.url)
        let chatty = events.filter { $0.name == "Chatty" && $0.event == .log }
        #expect(chatty.count > 0 && chatty.count < count)
        #expect(chatty.reduce(0) { $0 + $1.jsonLine.utf8.count + 1 } <= 80 << 10)
        let notices = events.filter { $0.event == .warning }
        #expect(notices.count == 1)
        #expect(notices.first?.name == "Chatty" && notices.first?.detail?.hasPrefix("Chatty's log records, warnings, transfers and other events they make past 0.1 MiB are not journaled") == true)
        #expect(events.contains { $0.name == "Quiet" && $0.event == .terminated })
        #expect(events.contains { $0.name == "Quiet" && $0.event == .log }, "another app's share is its own")
    }

    /// All apps together are held to three quarters of the journal: the rest is the life cycle's.
    @Test func allAppsTogetherLeaveAQuarterForTheLifeCycle() throws {
        let (journal, directory) = try journal()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Each app just within its share; seven of them past all apps' share.
        let perApp = (80 << 10) * 15 / 16 / (log("App0", 0).jsonLine.utf8.count + 1)
        for app in 0..<7 {
            for index in 0..<perApp { journal.record(log("App\(app)", index)) }
        }
        journal.record(HostEvent(time: Date(), app: "test.app0", name: "App0", event: .terminated, detail: "ended"))
        journal.close()
        let events = try EventJournal.events(in: journal.url)
        #expect(events.filter { $0.event == .warning }.map(\.detail) == ["the apps' log records, warnings, transfers and other events they make past 0.5 MiB are not journaled; life-cycle events still are"])
        #expect(events.last?.event == .terminated)
    }
}
