import AppHostProtocol
import AppHostRuntime
import AppHostTransfers
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// 1 GiB downloaded over loopback through the host's transfer service (async-http-client, writing
// its part file as a background download does) against curl on the same URL, in the same run.
// The server is Python's http.server on a sparse 1 GiB file: the same for both.

/// Prints the transfer figure; `--transfers-only` prints just it and exits, `--namespaces-only`
/// skips it.
func reportTransferThroughput(_ options: BenchmarkOptions, runs: Int = 3) {
    if options.narrowed && !options.transfersOnly { return }
    defer { if options.transfersOnly { exit(0) } }
    let size: Int64 = 1 << 30
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
        say("transfers: curl or python3 is missing (scripts/benchmark installs curl)")
        return
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-transfer-benchmark-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let served = directory.appendingPathComponent("served")
    try? FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
    let episode = served.appendingPathComponent("episode.bin")
    _ = FileManager.default.createFile(atPath: episode.path, contents: nil)
    truncate(episode.path, off_t(size))
    let port = 20_000 + Int(getpid() % 20_000)
    let server = Process()
    server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    server.arguments = ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", served.path]
    server.standardOutput = FileHandle.nullDevice
    server.standardError = FileHandle.nullDevice
    guard (try? server.run()) != nil else {
        say("transfers: cannot start python3 -m http.server")
        return
    }
    defer {
        server.terminate()
        server.waitUntilExit()
    }
    let url = "http://127.0.0.1:\(port)/episode.bin"
    let ready = Date().addingTimeInterval(10)
    while run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-r", "0-0", url]) == nil, Date() < ready { usleep(50_000) }

    let service = TransferService(readTimeout: .seconds(60))
    var serviceSeconds: [Double] = []
    var curlSeconds: [Double] = []
    for index in 0..<runs {
        let part = directory.appendingPathComponent("service-\(index).part")
        let done = DispatchSemaphore(value: 0)
        let received = LockedValue<Int64>(0)
        let start = now()
        let transfer = WireTransfer(session: "benchmark", task: index + 1, kind: .download, url: url)
        service.start(TransferJob(id: "benchmark-\(index)", transfer: transfer, file: part)) { update in
            if case .ended(let outcome) = update {
                if case .completed(_, let bytes, _, _) = outcome { received.set(bytes) }
                done.signal()
            }
        }
        done.wait()
        serviceSeconds.append(Double(now() - start) / 1e9)
        try? FileManager.default.removeItem(at: part)
        guard received.get() == size else {
            say("transfers: the service received \(received.get()) of \(size) bytes")
            return
        }
        let output = directory.appendingPathComponent("curl-\(index)")
        guard let curl = run("/usr/bin/curl", ["-s", "-f", "-o", output.path, url]) else {
            say("transfers: curl failed")
            return
        }
        curlSeconds.append(curl.milliseconds / 1000)
        try? FileManager.default.removeItem(at: output)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let mebibytes = Double(size) / 1_048_576
    let ours = mebibytes / median(serviceSeconds)
    let theirs = mebibytes / median(curlSeconds)
    say(String(
        format: "1 GiB loopback download (median of %d): transfer service %.0f MiB/s (%.2f s)   curl %.0f MiB/s (%.2f s)   %.2f× curl's throughput",
        runs, ours, median(serviceSeconds), theirs, median(curlSeconds), ours / theirs))
}

/// A value shared with the service's reporting thread.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
}
