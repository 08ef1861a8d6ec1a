import AppHostRuntime
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: ps under an output flood

/// How long `ps` (Supervisor.status(), what the command prints from) takes to answer while the
/// running app floods its standard output with 16-byte lines (the Probe's `"flood": "lines"`),
/// beside the same answer while the running app is idle: each phase runs one app, the same
/// Probe plugin. The app's output is forwarded, as `apphost launch` does, to the benchmark's
/// standard error, pointed at /dev/null meanwhile. An answer that does not come within 10 s ends
/// the measurement (a host that a flood starves would otherwise hang the benchmark).
func benchmarkStatusUnderFlood(executable: String, probe: URL, runs: Int) -> (flood: Sample, idle: Sample, note: String?) {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-flood-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    var configuration = Supervisor.Configuration(stateDirectory: scratch.appendingPathComponent("state"), executable: executable)
    configuration.forwardAppOutput = true
    // Storage costs are measured on their own (Storage.swift); this host is never shut down.
    configuration.storageMechanism = .accounting
    let log = EventLog()
    let supervisor = try! Supervisor(configuration: configuration) { log.record($0) }
    var cursor = 0

    let savedError = dup(2)
    log.failureOutput = savedError
    let null = open("/dev/null", O_WRONLY)
    dup2(null, 2)
    close(null)
    defer {
        dup2(savedError, 2)
        close(savedError)
    }

    /// One answer's time in ms, nil if none came within 10 s.
    func answerTime() -> Double? {
        let done = DispatchSemaphore(value: 0)
        let start = now()
        let elapsed = Elapsed()
        Thread.detachNewThread {
            _ = supervisor.status()
            elapsed.nanoseconds = now() - start
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return Double(elapsed.nanoseconds) / 1e6
    }

    /// `runs * 4` answers, 5 ms apart so that they fall at different moments of the flood.
    func answers(of name: String, behavior: [String: Any]) -> (values: [Double], complete: Bool) {
        try! supervisor.install(probeBundle(name, behavior: behavior, from: probe, in: scratch))
        try! supervisor.launch(name, kind: .foreground)
        _ = log.next("didBecomeActive", after: &cursor)
        usleep(200_000)  // the flood is under way
        var values: [Double] = []
        for _ in 0...(runs * 4) {
            guard let value = answerTime() else { return (values, false) }
            values.append(value)
            usleep(5_000)
        }
        values.removeFirst()  // warm-up
        try! supervisor.terminate(name)
        _ = log.next("terminated", after: &cursor)
        return (values, true)
    }

    let idle = answers(of: "Quiet", behavior: [:])
    let flood = answers(of: "Flooder", behavior: ["flood": "lines"])
    let note = flood.complete ? nil : "ps did not answer within 10 s under the flood, after \(flood.values.count) answers"
    return (
        Sample(label: "ps answer time while another app floods stdout", values: flood.values.isEmpty ? [10_000] : flood.values),
        Sample(label: "ps answer time idle", values: idle.values),
        note
    )
}

/// Written by the thread that asks, read after its semaphore.
private final class Elapsed: @unchecked Sendable {
    var nanoseconds: UInt64 = 0
}

/// A bundle's file in another bundle: a hard link where one can be made, else a symbolic link.
/// (Where a link points out of the bundle, an app launched by exec may not read what it points
/// to; one forked from the template finds the SDK loaded and opens nothing.)
func linkBundleFile(_ file: String, from source: URL, to bundle: URL) {
    let original = source.appendingPathComponent(file), link = bundle.appendingPathComponent(file)
    if (try? FileManager.default.linkItem(at: original, to: link)) == nil {
        try! FileManager.default.createSymbolicLink(at: link, withDestinationURL: original)
    }
}

/// A copy of the Probe bundle under `name`, with `behavior` as its ProbeBehavior.
func probeBundle(_ name: String, behavior: [String: Any], from probe: URL, in scratch: URL) -> AppBundle {
    let url = scratch.appendingPathComponent("\(name).app")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    for file in try! FileManager.default.contentsOfDirectory(atPath: probe.path) where file != "Info.plist" {
        linkBundleFile(file, from: probe, to: url)
    }
    let data = try! Data(contentsOf: probe.appendingPathComponent("Info.plist"))
    var info = try! PropertyListSerialization.propertyList(from: data, format: nil) as! [String: Any]
    info["CFBundleName"] = name
    info["CFBundleIdentifier"] = "benchmark.\(name.lowercased())"
    info["ProbeBehavior"] = behavior
    try! PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: url.appendingPathComponent("Info.plist"))
    return try! AppBundle(url: url)
}
