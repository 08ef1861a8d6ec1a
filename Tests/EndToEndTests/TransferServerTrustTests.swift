// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import Foundation
import Testing

/// A background transfer to a server whose certificate the system does not trust (README.md,
/// "Background transfers"): the app is asked as for a 401, through the session delegate's
/// `urlSession(_:didReceive:completionHandler:)` with `NSURLAuthenticationMethodServerTrust`,
/// and the transfer goes on with its answer: trusting that certificate (and only it), failing
/// with NSURLErrorServerCertificateUntrusted, or cancelled. Against `openssl s_server` with a
/// self-signed certificate made by the test (Foundation cannot serve TLS).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TransferServerTrustTests {
    let transfers = TransferTests()
    static let payload = Data((0..<5000).map { UInt8($0 % 251) })

    func lines(_ scratch: Scratch, _ name: String) -> [String] {
        scratch.recorded(name).filter { line in
            ["didReceive", "didFinishDownloading", "didComplete"].contains { line.hasPrefix($0) }
        }
    }

    @Test func aCertificateTheAppTrustsServesTheDownload() async throws {
        let server = try UntrustedServer(files: ["payload.bin": Self.payload])
        let scratch = try Scratch()
        let app = try transfers.app(scratch, "Truster", [["url": server.url("payload.bin")]], behavior: ["challengeAnswer": ["disposition": "trust"]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Truster delivered", timeout: 30) { $0.name == "Truster" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(lines(scratch, "Truster") == [
            "didReceiveSessionChallenge method=ServerTrust host=127.0.0.1:\(server.port) subject=apphost-untrusted der=true",
            "didFinishDownloading task=1 moved=true bytes=5000 tmp=true state=active",
            "didComplete task=1 error=nil status=200 sent=0",
        ])
        #expect(scratch.containerFile("test.truster", "Documents/download-1") == Self.payload)
        #expect(transfers.transferEvents(host, "Truster").contains { $0.contains("goes on trusting the server's certificate (apphost-untrusted)") })
    }

    /// The certificate trusted is pinned, not verification turned off: the transfer goes on
    /// trusting that certificate alone, so a redirect to a server presenting another fails.
    @Test func theTrustedCertificateAloneIsTrusted() async throws {
        let other = try UntrustedServer(files: ["payload.bin": Self.payload])
        let server = try UntrustedServer(
            files: ["hop": Data("HTTP/1.0 302 Found\r\nLocation: \(other.url("payload.bin"))\r\nContent-Length: 0\r\n\r\n".utf8)], http: true)
        let scratch = try Scratch()
        let app = try transfers.app(scratch, "Pinner", [["url": server.url("hop")]], behavior: ["challengeAnswer": ["disposition": "trust"]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Pinner delivered", timeout: 30) { $0.name == "Pinner" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(lines(scratch, "Pinner") == [
            "didReceiveSessionChallenge method=ServerTrust host=127.0.0.1:\(server.port) subject=apphost-untrusted der=true",
            "didComplete task=1 error=-1202 status=nil sent=0",
        ])
        #expect(transfers.transferEvents(host, "Pinner").contains { $0.contains("not the one the app trusted") })
    }

    /// Default handling (the system's judgement) and a rejected protection space fail as iOS
    /// fails an untrusted server; cancelling the challenge cancels the task.
    @Test(arguments: [
        ("performDefaultHandling", "didComplete task=1 error=-1202 status=nil sent=0"),
        ("reject", "didComplete task=1 error=-1202 status=nil sent=0"),
        ("cancel", "didComplete task=1 error=-999 status=nil sent=0"),
    ])
    func theAppsOtherAnswers(disposition: String, completion: String) async throws {
        let server = try UntrustedServer(files: ["payload.bin": Self.payload])
        let scratch = try Scratch()
        let app = try transfers.app(scratch, "Doubter", [["url": server.url("payload.bin")]], behavior: ["challengeAnswer": ["disposition": disposition]])
        let host = try HostSession([app], scratch: scratch, arguments: TransferTests.local)
        try host.waitFor("Doubter delivered", timeout: 30) { $0.name == "Doubter" && $0.event == "transfer" && $0.detail?.hasSuffix("delivered") == true }
        #expect(lines(scratch, "Doubter") == [
            "didReceiveSessionChallenge method=ServerTrust host=127.0.0.1:\(server.port) subject=apphost-untrusted der=true",
            completion,
        ])
    }
}

/// `openssl s_server -WWW` serving a directory of the test's over TLS (`-HTTP`: each file is a
/// whole response, head and all), with a self-signed certificate for 127.0.0.1 made for it (CN
/// apphost-untrusted): one no system trusts, and another for each server.
final class UntrustedServer {
    let directory: URL
    let port: Int
    private let process = Process()

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    init(files: [String: Data], http: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("untrusted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, data) in files { try data.write(to: directory.appendingPathComponent(name)) }
        let made = try Self.run([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "2",
            "-subj", "/CN=apphost-untrusted", "-addext", "subjectAltName=IP:127.0.0.1",
        ], in: directory)
        guard made == 0 else { throw Failed(description: "openssl req exited \(made)") }
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "cert.pem", "-key", "key.pem", http ? "-HTTP" : "-WWW"]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Listening once it says ACCEPT.
        var said = Data()
        while !String(decoding: said, as: UTF8.self).contains("ACCEPT") {
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else { throw Failed(description: "openssl s_server ended: \(String(decoding: said, as: UTF8.self))") }
            said += more
        }
    }

    deinit {
        // s_server does not end on SIGTERM while it waits for a connection.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    func url(_ path: String) -> String { "https://127.0.0.1:\(port)/\(path)" }

    private static func run(_ arguments: [String], in directory: URL) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A port no one listens on now (the kernel's choice for a socket bound to port 0).
    private static func freePort() throws -> Int {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(probe) }
        var address = TransferServer.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
        }
        guard probe >= 0, bound else { throw Failed(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
