import Foundation
import Testing

/// Each example app walked through the same commands (launch, home, open, terminate, quit) gives
/// the same life-cycle events as recorded in `Goldens/NAME.events`: the host's behaviour, kept
/// while its code is moved. Times, pids, durations and counts are normalised away; app output
/// (a channel of its own, interleaved by timing) is not compared.
///
/// `APPHOST_RECORD_GOLDENS=1 swift test --filter GoldenWalkTests` writes them anew (then read the
/// diff: a change in a golden is a change in behaviour).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct GoldenWalkTests {
    static let examples = [
        "Cleanup", "Hello", "Journal", "Notes", "Pages", "Player", "Podcasts", "RunTracker", "Softphone", "Uploader", "Weather",
    ]
    private static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")

    @Test(arguments: examples) func walk(_ name: String) throws {
        let bundle = Paths.apps.appendingPathComponent("\(name).app")
        try Paths.requireBuilt(bundle)
        let scratch = try Scratch()
        // Offline: a transfer waits for the network rather than race its server's refusal.
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--network", "offline"])
        // Each command waits for the app to settle first (docs/commands.md, "Commands").
        for command in ["home", "open \(name)", "terminate \(name)"] { host.send(command) }
        try host.waitFor(name, "terminated")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        let events = host.allEvents.filter { $0.name == name && Self.compared($0) }
        let sequence = events.filter { !Self.unordered($0) }.map { Self.normalised($0) }
        let others = events.filter { Self.unordered($0) }.map { Self.normalised($0, state: false) }.sorted()
        let walked = (sequence + others).joined(separator: "\n") + "\n"

        let golden = Self.goldens.appendingPathComponent("\(name).events")
        if ProcessInfo.processInfo.environment["APPHOST_RECORD_GOLDENS"] == "1" {
            try walked.write(to: golden, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(walked == expected, "\(name)'s walk differs from \(golden.path):\n\(walked)")
    }

    /// Whether the event is said once a store has written it (docs/storage.md, "What survives the
    /// host"): it comes in the walk, but not at one place in it; compared as a set, without the
    /// state.
    static func unordered(_ event: Event) -> Bool {
        ["taskSubmitted", "fetchInterval"].contains(event.event)
    }

    /// A transfer is said to be created once its record is on the disk, and not if the app
    /// cancelled it (here: the user force quit it) first: on a disk busy with other writes, an
    /// fsync can take longer than the walk.
    static func compared(_ event: Event) -> Bool {
        !(event.event == "transfer" && event.detail?.hasSuffix(" created") == true)
    }

    /// `event state detail`, every run of digits in the detail replaced by `N`.
    static func normalised(_ event: Event, state: Bool = true) -> String {
        let detail = (event.detail ?? "").replacingOccurrences(of: "[0-9]+(\\.[0-9]+)?", with: "N", options: .regularExpression)
        return [event.event, state ? event.state ?? "-" : "-", detail].joined(separator: " ")
    }
}
