import AppHostProtocol
import AppHostRuntime
import AppHostTransfers
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The host's transfer service (libcurl's multi interface, writing a part file as a background
// download does, streaming an upload's body from its file) against the curl command on the
// same URLs in the same run: a 1 GiB download, a 1 GiB upload, and 1,000 downloads of 100 KiB
// (curl fetches those one after another in one process, reusing its connection; the service
// runs them as the host would, several at once). The server is a small Python HTTP/1.1 server
// (keep-alive) over a sparse 1 GiB file and 100 KiB files: the same for both.

/// Prints the transfer figures and records them (`transferDownload`, `transferUpload`,
/// `transferSmall`); `--transfers-only` prints just them and exits, `--namespaces-only` skips them.
func reportTransferThroughput(_ options: BenchmarkOptions, figures: Figures, runs: Int = 3) {
    if options.narrowed && !options.transfersOnly { return }
    defer {
        if options.transfersOnly {
            figures.write()
            exit(0)
        }
    }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
        say("transfers: curl or python3 is missing (scripts/benchmark installs curl)")
        return
    }
    guard let bench = TransferBench() else { return }
    defer { bench.stop() }
    let size: Int64 = 1 << 30
    let mebibytes = Double(size) / 1_048_576
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    var ours: [Double] = [], theirs: [Double] = []
    for index in 0..<runs {
        guard let seconds = bench.service(.download, bench.url("big.bin"), index: index, expect: size), let curl = bench.curl(["-s", "-f", "-o", bench.directory.appendingPathComponent("curl.bin").path, bench.url("big.bin")]) else { return }
        ours.append(seconds)
        theirs.append(curl)
    }
    say(String(format: "1 GiB loopback download (median of %d): transfer service %.0f MiB/s (%.2f s)   curl %.0f MiB/s (%.2f s)   %.2f× curl's speed",
               runs, mebibytes / median(ours), median(ours), mebibytes / median(theirs), median(theirs), median(theirs) / median(ours)))
    figures.record(transfer: "transferDownload", seconds: median(ours), curlSeconds: median(theirs))

    ours = []; theirs = []
    for index in 0..<runs {
        guard let seconds = bench.service(.upload, bench.url("upload"), index: index, expect: size, body: bench.served("big.bin")),
              let curl = bench.curl(["-s", "-f", "-o", "/dev/null", "-T", bench.served("big.bin").path, bench.url("upload")]) else { return }
        ours.append(seconds)
        theirs.append(curl)
    }
    say(String(format: "1 GiB loopback upload (median of %d):   transfer service %.0f MiB/s (%.2f s)   curl %.0f MiB/s (%.2f s)   %.2f× curl's speed",
               runs, mebibytes / median(ours), median(ours), mebibytes / median(theirs), median(theirs), median(theirs) / median(ours)))
    figures.record(transfer: "transferUpload", seconds: median(ours), curlSeconds: median(theirs))

    let count = 1000
    let config = bench.directory.appendingPathComponent("small.curl")
    let lines = (0..<count).map { "url = \"\(bench.url("small/\($0 % 10).bin"))\"\noutput = \"\(bench.directory.path)/curl-small-\($0)\"" }
    try? lines.joined(separator: "\n").write(to: config, atomically: true, encoding: .utf8)
    ours = []; theirs = []
    for _ in 0..<runs {
        guard let seconds = bench.serviceMany(count), let curl = bench.curl(["-s", "-f", "-K", config.path]) else { return }
        ours.append(seconds)
        theirs.append(curl)
    }
    say(String(format: "1,000 loopback downloads of 100 KiB (median of %d): transfer service %.2f s   curl %.2f s (one after another, one process)   %.2f× curl's speed",
               runs, median(ours), median(theirs), median(theirs) / median(ours)))
    figures.record(transfer: "transferSmall", seconds: median(ours), curlSeconds: median(theirs))
}

/// The benchmark's server and files.
private final class TransferBench {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-transfer-benchmark-\(getpid())")
    let port = 20_000 + Int(getpid() % 20_000)
    private let server = Process()
    private let service = TransferService(readTimeout: .seconds(60), destinations: try! TransferDestinations(parsing: ["127.0.0.1"]))

    init?() {
        try? FileManager.default.createDirectory(at: served("small"), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: served("big.bin").path, contents: nil)
        truncate(served("big.bin").path, off_t(1 << 30))
        for index in 0..<10 {
            FileManager.default.createFile(atPath: served("small/\(index).bin").path, contents: Data(repeating: UInt8(index), count: 100 * 1024))
        }
        let script = directory.appendingPathComponent("server.py")
        try? Self.serverScript.write(to: script, atomically: true, encoding: .utf8)
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [script.path, String(port), served("").path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        guard (try? server.run()) != nil else {
            say("transfers: cannot start the Python server")
            return nil
        }
        let ready = Date().addingTimeInterval(10)
        while run("/usr/bin/curl", ["-s", "-f", "-o", "/dev/null", url("small/0.bin")]) == nil, Date() < ready { usleep(50_000) }
    }

    func stop() {
        server.terminate()
        server.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    func served(_ name: String) -> URL { directory.appendingPathComponent("served").appendingPathComponent(name) }
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// curl's seconds, or nil (said) if it failed.
    func curl(_ arguments: [String]) -> Double? {
        guard let result = run("/usr/bin/curl", arguments) else {
            say("transfers: curl \(arguments.joined(separator: " ")) failed")
            return nil
        }
        return result.milliseconds / 1000
    }

    /// One transfer through the service; its seconds, or nil (said) if it did not move `expect` bytes.
    func service(_ kind: WireTransfer.Kind, _ url: String, index: Int, expect: Int64, body: URL? = nil) -> Double? {
        let file = body ?? directory.appendingPathComponent("service-\(index).part")
        let done = DispatchSemaphore(value: 0)
        let moved = LockedValue<Int64>(-1)
        let start = now()
        let transfer = WireTransfer(session: "benchmark", task: index + 1, kind: kind, url: url, method: kind == .upload ? "PUT" : nil)
        service.start(TransferJob(id: "\(kind)-\(index)", transfer: transfer, file: file)) { update in
            guard case .ended(let outcome) = update else { return }
            if case .completed(_, let received, let sent, _, _) = outcome { moved.set(kind == .download ? received : sent) }
            done.signal()
        }
        done.wait()
        let seconds = Double(now() - start) / 1e9
        if body == nil { try? FileManager.default.removeItem(at: file) }
        guard moved.get() == expect else {
            say("transfers: the service moved \(moved.get()) of \(expect) bytes")
            return nil
        }
        return seconds
    }

    /// `count` downloads of 100 KiB started at once, as an app's session would; the seconds until the last ended.
    func serviceMany(_ count: Int) -> Double? {
        let group = DispatchGroup()
        let completed = LockedValue<Int>(0)
        let start = now()
        for index in 0..<count {
            group.enter()
            let transfer = WireTransfer(session: "benchmark", task: index + 1, kind: .download, url: url("small/\(index % 10).bin"))
            let file = directory.appendingPathComponent("small-\(index).part")
            service.start(TransferJob(id: "small-\(index)", app: "benchmark", transfer: transfer, file: file)) { update in
                guard case .ended(let outcome) = update else { return }
                if case .completed(_, 102_400, _, _, _) = outcome { completed.update { $0 += 1 } }
                group.leave()
            }
        }
        group.wait()
        let seconds = Double(now() - start) / 1e9
        for index in 0..<count { try? FileManager.default.removeItem(at: directory.appendingPathComponent("small-\(index).part")) }
        guard completed.get() == count else {
            say("transfers: \(completed.get()) of \(count) small downloads completed")
            return nil
        }
        return seconds
    }

    /// HTTP/1.1 with keep-alive: GET serves a file (the sparse 1 GiB one by sendfile), PUT reads
    /// and drops its body.
    static let serverScript = """
    import http.server, os, socketserver, sys
    root = sys.argv[2]
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *args): pass
        def do_GET(self):
            path = os.path.join(root, self.path.lstrip("/"))
            try:
                f = open(path, "rb")
            except OSError:
                self.send_error(404); return
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.flush()
            offset = 0
            while offset < size:
                offset += os.sendfile(self.connection.fileno(), f.fileno(), offset, size - offset)
            f.close()
        def do_PUT(self):
            left = int(self.headers.get("Content-Length", "0"))
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk: break
                left -= len(chunk)
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
}

/// A value shared with the service's reporting thread.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&value) } }
}
