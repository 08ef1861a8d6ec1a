import Foundation
import Testing

/// A hostile app turns the host's background transfers on what it cannot reach itself (README.md,
/// "Background transfers", "What an app can reach through the host"): the host connects from
/// outside the app's sandbox, so it must not be the app's deputy. Each test fails without the
/// rule it names.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TransferDeputyTests {
    let transfers = TransferTests()

    func failures(_ host: HostSession, _ name: String) -> [String] {
        transfers.transferEvents(host, name).filter { $0.contains("failed:") || $0.contains("refused") }
    }

    /// Without the network entitlement an app's own connect(2) fails; its background transfer is
    /// refused as well, and the refusal is not an app's fault (the SDK does not acknowledge it).
    @Test func anAppWithoutTheNetworkEntitlementCannotTransfer() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let app = try scratch.bundle("Offline", behavior: ["transfers": [["url": server.url("/files/1000")]]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try scratch.waitForRecorded("Offline", "didComplete task=1 error=-1004 status=nil sent=0")
        // The event may reach the test after the app's line: waited for, not looked up.
        try host.waitFor("the refusal") {
            $0.name == "Offline" && $0.event == "transfer" && $0.detail?.contains("lacks the network entitlement") == true
        }
        #expect(server.requests.isEmpty)
        // Still running: a refusal acknowledged as a delivery would end it for a protocol violation.
        host.send("home")
        try host.waitFor("Offline", "suspended")
        #expect(!host.allEvents.contains { $0.name == "Offline" && $0.event == "terminated" })
    }

    /// Loopback is refused by address, whatever the URL names (127.0.0.1, or localhost).
    @Test func loopbackIsRefusedUnlessTheHostAllowsIt() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let urls = [server.url("/files/1000"), "http://localhost:\(server.port)/files/2000"]
        let app = try transfers.app(scratch, "Prober", urls.map { ["url": $0] })
        let host = try HostSession([app], scratch: scratch)
        try host.waitFor("both refused", occurrence: 2, timeout: 20) { $0.name == "Prober" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        let failed = failures(host, "Prober")
        #expect(failed.count == 2, "\(failed)")
        #expect(failed.allSatisfy { $0.contains("is a loopback address") && $0.contains("URLError -1004") }, "\(failed)")
        #expect(server.requests.isEmpty)
    }

    /// A redirect is judged again, at the address it connects to: a server the host may reach
    /// cannot send it on to one it may not.
    @Test func aRedirectToARefusedAddressIsRefused() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let target = "http://127.0.0.2:\(server.port)/files/1000"
        let redirect = server.url("/redirect?to=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
        let app = try transfers.app(scratch, "Bouncer", [["url": redirect]])
        let host = try HostSession([app], scratch: scratch, arguments: ["--allow-transfers-to", "127.0.0.1:\(server.port)"])
        try host.waitFor("Bouncer delivered", timeout: 20) { $0.name == "Bouncer" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(failures(host, "Bouncer").contains { $0.contains("127.0.0.2 is a loopback address") }, "\(failures(host, "Bouncer"))")
        #expect(server.requests.count == 1 && server.requests[0].hasPrefix("GET /redirect"), "\(server.requests)")
    }

    /// Part files and upload bodies count against the app's storage limit: a download cannot
    /// grow past it in the host's state directory, and a body that would not fit is refused.
    @Test func transfersCountAgainstTheStorageLimit() async throws {
        let server = try await TransferServer()
        let scratch = try Scratch()
        let list: [[String: Any]] = [["url": server.url("/files/40000000")], ["kind": "upload", "url": server.url("/upload")]]
        let app = try scratch.bundle("Hoarder", behavior: ["transfers": list, "uploadBytes": 10_000_000], changes: TransferTests.network)
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local + ["--storage-limit", "16"])
        try host.waitFor("the download delivered", timeout: 30) { $0.name == "Hoarder" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        try scratch.waitForRecorded("Hoarder", "didComplete task=2 error=-3003 status=nil sent=0")
        let failed = failures(host, "Hoarder")
        #expect(failed.contains { $0.contains("download task 1") && $0.contains("past its storage limit of 16.0 MiB") && $0.contains("URLError -3003") }, "\(failed)")
        #expect(failed.contains { $0.contains("refused upload task 2") && $0.contains("past its storage limit") }, "\(failed)")
        #expect(!server.requests.contains { $0.hasPrefix("PUT") })
        let completions = scratch.recorded("Hoarder").filter { $0.hasPrefix("didComplete") }.sorted()
        #expect(completions == ["didComplete task=1 error=-3003 status=nil sent=0", "didComplete task=2 error=-3003 status=nil sent=0"], "\(completions)")
    }

    /// Control characters in a transfer's words never reach a terminal: the transfer is refused.
    @Test func aTransferWithTerminalEscapesIsRefused() async throws {
        let scratch = try Scratch()
        let app = try scratch.bundle("Painter", behavior: ["wireAttack": "transferWithEscapes"], changes: TransferTests.network)
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("the refusal") { $0.name == "Painter" && $0.event == "transfer" && $0.detail?.contains("holds a control character") == true }
        #expect(try transfers.listing(host).isEmpty)
        host.send("home")
        try host.waitFor("Painter", "suspended")
    }
}
