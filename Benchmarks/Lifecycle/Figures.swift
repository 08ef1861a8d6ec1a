import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: Output

/// The figures a program checks (`--json`): each one's median and p99 in milliseconds under a
/// fixed key, and with `--scale N` the scale run's. With `--json` the JSON object is the only
/// thing on standard output and the human table goes to standard error.
final class Figures {
    let json: Bool
    private var entries: [String: Any] = [:]

    init(json: Bool) { self.json = json }

    func record(_ key: String, _ sample: Sample) {
        entries[key] = Self.object(sample)
    }

    func record(scale result: ScaleResult) {
        var object: [String: Any] = [
            "apps": result.apps, "hostRssMiB": Self.rounded(result.hostRssMiB), "hostIdleTicks": result.hostIdleTicks,
            "idleSeconds": result.idleSeconds, "launchFirstTenth": Self.object(result.firstTenth),
            "launchLastTenth": Self.object(result.lastTenth), "pssPerAppMiB": Self.rounded(result.pssPerAppMiB),
            "seconds": Self.rounded(result.seconds), "hostCpuPerLaunchFirstTenthMs": Self.rounded(result.hostCpuFirstTenthMs),
            "hostCpuPerLaunchLastTenthMs": Self.rounded(result.hostCpuLastTenthMs),
        ]
        if let stopped = result.stopped { object["stopped"] = stopped }
        entries["scale"] = object
    }

    /// A transfer figure: our seconds, curl's on the same URLs in the same run, and curl's time
    /// over ours (1.0 is curl's speed, higher is faster).
    func record(transfer key: String, seconds: Double, curlSeconds: Double) {
        entries[key] = ["seconds": Self.rounded(seconds), "curlSeconds": Self.rounded(curlSeconds), "ratioToCurl": Self.rounded(curlSeconds / seconds)]
    }

    /// Writes the JSON object to standard output (with `--json`).
    func write() {
        guard json else { return }
        let data = try! JSONSerialization.data(withJSONObject: entries, options: [.sortedKeys, .prettyPrinted])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    private static func object(_ sample: Sample) -> [String: Any] {
        ["median": rounded(sample.median), "p99": rounded(sample.p99)]
    }

    private static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}

/// Set by `--json`: the human table goes to standard error.
nonisolated(unsafe) var humanTableToStandardError = false

/// A line of the human table: on standard output, or with `--json` on standard error.
func say(_ line: String) {
    if humanTableToStandardError {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    } else {
        print(line)
    }
}
