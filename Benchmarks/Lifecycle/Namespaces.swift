import AppHostRuntime
import Foundation

/// What each app's own PID and mount namespaces cost a launch: launches to
/// applicationDidBecomeActive by two hosts, one giving apps their namespaces and one not,
/// taken in turn so that drift on a shared machine falls on both alike. Nil where the machine
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
        let log = EventLog()
        let supervisor = try! Supervisor(configuration: configuration) { log.record($0) }
        try! supervisor.install(bundle)
        return (supervisor, log)
    }
    let hosts = [host(namespaces: true), host(namespaces: false)]
    guard hosts[0].0.sandboxNote.contains("own PID and mount namespaces") else { return nil }
    var cursors = [0, 0]
    var launches: [[Double]] = [[], []]
    for _ in 0...runs {
        for (index, (supervisor, log)) in hosts.enumerated() {
            let start = now()
            try! supervisor.launch(bundle.name, kind: .foreground)
            let active = log.next("didBecomeActive", after: &cursors[index])
            launches[index].append(Double(active.at - start) / 1e6)
            try! supervisor.terminate(bundle.name)
            _ = log.next("terminated", after: &cursors[index])
        }
    }
    return (
        Sample(label: "launch to didBecomeActive, own PID and mount namespaces", values: Array(launches[0].dropFirst())),
        Sample(label: "the same launch without namespaces", values: Array(launches[1].dropFirst()))
    )
}
