import Foundation
import Logging

// Logging through swift-log, which AppHostKit has bootstrapped: behaviour key `log`, a list of
// records ({"in": CALLBACK, "level", "label", "message", "metadata": {…}}) logged in that callback,
// and `logFlood` (a count): that many info records from a background thread at launch.

extension AppDelegate {
    func loggingProbes(in name: String) {
        for record in behavior["log"] as? [[String: Any]] ?? [] where record["in"] as? String == name {
            var logger = Logger(label: record["label"] as? String ?? "probe")
            if let level = (record["setLevel"] as? String).flatMap(Logger.Level.init(rawValue:)) { logger.logLevel = level }
            let metadata = (record["metadata"] as? [String: String] ?? [:]).mapValues { Logger.MetadataValue.string($0) }
            logger.log(level: Logger.Level(rawValue: record["level"] as? String ?? "info") ?? .info, "\(record["message"] as? String ?? "")", metadata: metadata)
        }
        if name == "didFinishLaunching", let count = behavior["logFlood"] as? Int {
            Thread.detachNewThread {
                let logger = Logger(label: "probe.flood")
                for index in 0..<count { logger.info("record \(index)") }
            }
        }
    }
}
