import Foundation
import Testing

/// URLSession as iOS has it (docs/transfers.md, "Background transfers"): a session's own delegate
/// queue, resume data, and ordinary sessions beside background ones under `import UIKit`.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct URLSessionFidelityTests {
    let transfers = TransferTests()
    static let session = TransferTests.session

    /// `delegateQueue: nil` is a serial queue of the session's own: a delegate that records
    /// through `DispatchQueue.main.sync` (which traps on the main queue) gets every event.
    @Test func aSessionWithoutADelegateQueueCallsItsDelegateOffTheMainThread() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let app = try transfers.app(scratch, "Queued", [["url": server.url("/slow/300000")]], behavior: ["urlSessionQueue": "own"])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Queued", "didBecomeActive")
        host.send("home")
        try host.waitFor("Queued", "suspended")
        try host.waitFor("Queued", "urlSessionEventsCompleted", timeout: 30)
        try host.waitFor("Queued", "suspended", occurrence: 2)
        #expect(transfers.sessionLines(scratch, "Queued") == [
            "resumed task=1 download",
            "handleEvents \(Self.session) background main=true",
            "didFinishDownloading task=1 moved=true bytes=300000 tmp=true state=background",
            "didComplete task=1 error=nil status=200 sent=0",
            "didFinishEvents \(Self.session) main=false",
            "completed events",
        ])
    }

    /// `cancel(byProducingResumeData:)`: the host keeps the part file, the app gets resume data
    /// (and `didCompleteWithError` has it in `userInfo`), and `downloadTask(withResumeData:)`
    /// goes on with a Range request.
    @Test func aCancelledDownloadGoesOnFromItsResumeData() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let size = 2_000_000
        let app = try transfers.app(scratch, "Resumer", [["url": server.url("/slow/\(size)")]], behavior: ["cancelForResumeAt": 300_000])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("the second delivered", timeout: 40) { $0.name == "Resumer" && $0.event == "transfer" && $0.detail?.contains("download task 2") == true && $0.detail?.hasSuffix("delivered") == true }
        let seen = scratch.recorded("Resumer").filter { ["resumeData", "resumed", "didComplete", "didFinishDownloading"].contains(where: $0.hasPrefix) }
        #expect(seen.first == "resumed task=1 download")
        #expect(seen.dropFirst().first?.hasPrefix("resumeData task=1 bytes=") == true, "\(seen)")
        #expect(Array(seen.dropFirst(2)) == [
            "resumed task=2 fromResumeData",
            "didComplete task=1 error=-999 status=nil sent=0 resumeData=yes",
            "didFinishDownloading task=2 moved=true bytes=\(size) tmp=true state=active",
            "didComplete task=2 error=nil status=206 sent=0",
        ])
        #expect(scratch.containerFile("test.resumer", "Documents/download-2") == TransferServer.content(size))
        #expect(server.requests.count == 2 && server.requests[1].hasPrefix("GET /slow/\(size) range=bytes="), "\(server.requests)")
        let from = Int(server.requests[1].split(separator: "=").last?.dropLast() ?? "") ?? 0
        #expect(from >= 300_000, "it went on from what the first had")
        #expect(try transfers.listing(host).isEmpty, "the part file went with the second task")
    }

    /// An app that uses `URLSession.shared` (a completion handler), a `.default` session (async)
    /// and a background session in one file, under `import UIKit` alone (Tests/Fixtures/Networker).
    @Test func ordinaryAndBackgroundSessionsWorkSideBySideUnderUIKit() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let app = try scratch.bundle("Networker", from: "Networker", changes: ["NetworkerServer": server.url("")])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitForStandardError(containing: "networker: shared status=200 bytes=1000", timeout: 30)
        try host.waitForStandardError(containing: "networker: async status=200 bytes=2000", timeout: 30)
        try host.waitForStandardError(containing: "networker: background task=1 bytes=3000", timeout: 30)
        #expect(server.requests.contains("GET /files/2000 x-episode=async"), "the header field was sent: \(server.requests)")
        let violations = host.allEvents.filter { $0.event == "violation" }.compactMap(\.detail)
        #expect(violations.isEmpty, "an entitled app's own sockets are allowed: \(violations)")
        // Said once the app has acknowledged it, which may be after its line above.
        try host.waitFor("the background transfer delivered") { $0.name == "Networker" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
    }

    /// Without the network entitlement the sandbox refuses the app's own socket (a violation
    /// names it) and the host its background transfer: the same policy for both kinds.
    @Test func withoutTheEntitlementNeitherKindReachesTheNetwork() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let app = try scratch.bundle("Unplugged", from: "Networker", changes: ["NetworkerServer": server.url(""), "AppHostEntitlements": nil])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitForStandardError(containing: "networker: shared error=", timeout: 30)
        try host.waitForStandardError(containing: "networker: async error=", timeout: 30)
        try host.waitForStandardError(containing: "networker: background error=-1004", timeout: 30)
        #expect(server.requests.isEmpty)
        // The host says so once it has answered the refused call, which may be after the app's line.
        try host.waitFor("the violation") { $0.event == "violation" && $0.detail?.contains("socket(AF_INET) refused") == true }
    }
}
