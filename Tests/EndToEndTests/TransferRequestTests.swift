import Foundation
import Testing

/// What an app says about a transfer beyond its URL (docs/transfers.md, "Background transfers"): its
/// request's header fields, its earliest begin date, and the progress callbacks it gets while it
/// runs.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TransferRequestTests {
    let transfers = TransferTests()

    @Test func headerFieldsReachTheServerAndProgressReachesTheRunningApp() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let size = 800_000
        let app = try transfers.app(scratch, "Watcher", [["url": server.url("/slow/\(size)"), "headers": ["X-Episode": "12"]]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Watcher delivered", timeout: 30) { $0.name == "Watcher" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(server.requests == ["GET /slow/\(size) x-episode=12"])
        // Lines like "didWriteData task=1 written=W total=T expected=E state=active".
        let progress = scratch.recorded("Watcher").filter { $0.hasPrefix("didWriteData") }.map { line in
            Dictionary(uniqueKeysWithValues: line.split(separator: " ").dropFirst().compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            })
        }
        #expect(!progress.isEmpty, "the running app heard of its download's progress")
        #expect(progress.allSatisfy { $0["expected"] == "\(size)" && $0["task"] == "1" && $0["state"] == "active" })
        // The task's own counts are set before its delegate hears of the progress.
        #expect(progress.allSatisfy { $0["received"] == $0["total"] && $0["expectedToReceive"] == "\(size)" }, "\(progress)")
        let totals = progress.compactMap { $0["total"].flatMap { Int($0) } }
        #expect(totals == totals.sorted() && Set(totals).count == totals.count && (totals.last ?? 0) <= size, "\(totals)")
        #expect(progress.compactMap { $0["written"].flatMap { Int($0) } }.reduce(0, +) == totals.last)
    }

    /// A transfer waits for its earliest begin date, on the scheduler's clock (`advance` moves it).
    @Test func aTransferWaitsForItsEarliestBeginDate() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let app = try transfers.app(scratch, "Later", [["url": server.url("/files/5000"), "beginIn": 3600.0]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Later transfer") { $0.name == "Later" && $0.event == "transfer" && $0.detail?.hasSuffix("created") == true }
        let waiting = try transfers.listing(host)
        #expect(waiting.first?["state"] as? String == "waiting")
        #expect((waiting.first?["waitingFor"] as? String)?.hasPrefix("its earliest begin date, ") == true, "\(waiting)")
        #expect(server.requests.isEmpty)
        host.send("advance 3601")
        try host.waitFor("Later delivered", timeout: 20) { $0.name == "Later" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(server.requests == ["GET /files/5000"])
        #expect(scratch.containerFile("test.later", "Documents/download-1") == TransferServer.content(5000))
    }
}
