import AppHostRuntime
import Foundation

/// What each app's own PID and mount namespaces cost a launch: launches to
/// applicationDidBecomeActive by two hosts, one giving apps their namespaces and one not,
/// taken in turn (alternating which goes first) so that drift on a shared machine falls on both
/// alike. Nil where the machine
/// gives no namespaces.
func benchmarkNamespaceCost(bundle: AppBundle, executable: String, runs: Int) -> (namespaced: Sample, flat: Sample)? {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-namespaces-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    func host(namespaces: Bool) -> (Supervisor, EventLog) {
        var configuration = Supervisor.Configuration(
            stateDirectory: scratch.appendingPathComponent(namespaces ? "namespaced" : "flat"), executable: executable)
        configuration.instance = namespaces ? "benchmark-namespaced" : "benchmark-flat"
        configuration.namespaces = namespaces
        configuration.forwardAppOutput = false
        // Storage costs are measured on their own (Storage.swift); a disk image would also stay
        // mounted after `--namespaces-only`, which exits without shutting its hosts down.
        configuration.storageMechanism = .accounting
        let log = EventLog()
        let supervisor = try! Supervisor(configuration: configuration) { log.record($0) }
        try! supervisor.install(bundle)
        return (supervisor, log)
    }
    let hosts = [host(namespaces: true), host(namespaces: false)]
    guard hosts[0].0.facts.sandboxNote.contains("own PID and mount namespaces") else { return nil }
    var cursors = [0, 0]
    var launches: [[Double]] = [[], []]
    var phases: [[[Double]]] = [[[], [], []], [[], [], []]]
    var confinements: [[Double]] = [[], []]
    for run in 0...runs {
        // In turn, and in the other order every other run, so neither side always goes first.
        for index in run % 2 == 0 ? [0, 1] : [1, 0] {
            let (supervisor, log) = hosts[index]
            let start = now()
            try! supervisor.launch(bundle.name, kind: .foreground)
            let sandboxed = log.next("sandboxed", after: &cursors[index])
            let loaded = log.next("loaded", after: &cursors[index])
            let active = log.next("didBecomeActive", after: &cursors[index])
            launches[index].append(Double(active.at - start) / 1e6)
            phases[index][0].append(Double(sandboxed.at - start) / 1e6)
            confinements[index].append(sandboxed.event.elapsed!.seconds * 1000)
            phases[index][1].append(Double(loaded.at - sandboxed.at) / 1e6)
            phases[index][2].append(Double(active.at - loaded.at) / 1e6)
            try! supervisor.terminate(bundle.name)
            _ = log.next("terminated", after: &cursors[index])
        }
    }
    // Each run's two launches differ by this much: the median of the differences is steadier on
    // a loaded machine than the difference of the medians.
    let differences = Sample(label: "", values: zip(launches[0], launches[1]).dropFirst().map { $0 - $1 })
    say("  namespaced minus flat, paired by run: median \(String(format: "%.3f", differences.median)) ms, "
        + "quartiles \(String(format: "%.3f", differences.percentile(0.25)))…\(String(format: "%.3f", differences.percentile(0.75))) ms")
    for (index, name) in ["namespaced", "flat"].enumerated() {
        let medians = phases[index].map { Sample(label: "", values: Array($0.dropFirst())).median }
        let confinement = Sample(label: "", values: Array(confinements[index].dropFirst())).median
        say("  \(name): to sandboxed \(String(format: "%.3f", medians[0])) (confinement in the app process \(String(format: "%.3f", confinement))), "
            + "to loaded \(String(format: "%.3f", medians[1])), to active \(String(format: "%.3f", medians[2])) ms")
    }
    return (
        Sample(label: "launch to didBecomeActive, own PID and mount namespaces", values: Array(launches[0].dropFirst())),
        Sample(label: "the same launch without namespaces", values: Array(launches[1].dropFirst()))
    )
}
