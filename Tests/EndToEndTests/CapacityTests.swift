import Foundation
import Testing

/// How many apps fit in a host (docs/launching.md, "How many apps fit"): the `started` event says it and
/// the limit that bounds it, and a launch past it is refused in one line naming the limit.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CapacityTests {
    /// Regression: at 2,219 apps a scale run stopped with "did not become active (terminated)",
    /// no cause stated: the host had run out of descriptors.
    @Test func aLaunchPastTheDescriptorLimitIsRefusedNamingIt() throws {
        let scratch = try Scratch()
        let names = (0..<8).map { "Fit\($0)" }
        let bundles = try names.map { try scratch.bundle($0) }
        let host = try HostSession(bundles, scratch: scratch, openFileLimit: 320)
        let started = try host.waitFor("the started event") { $0.event == "started" }
        let capacity = try #require(started.fields["capacity"] as? Int)
        #expect(started.fields["capacityBoundBy"] as? String == "RLIMIT_NOFILE 320 (8 descriptors an app)")
        #expect(started.detail?.contains("capacity: holds \(capacity) apps (bound by RLIMIT_NOFILE 320") == true)
        try #require(capacity >= 1 && capacity < names.count, "the limit leaves room for a few apps: \(capacity)")
        try host.waitFor(names[0], "didBecomeActive")
        for name in names[1..<capacity] {
            host.send("open \(name)")
            try host.waitFor(name, "didBecomeActive")
        }
        let refused = names[capacity]
        host.send("open \(refused)")
        let ended = try host.waitFor(refused, "terminated")
        #expect(ended.reason == "cannot launch \(refused): \(capacity) apps run, the most this host can hold under RLIMIT_NOFILE 320 (8 descriptors an app); raise the host's open-file limit (ulimit -n, or LimitNOFILE= in its unit), or end an app")
        // The host goes on: another app ended, the refused one launches.
        host.send("terminate \(names[0])")
        try host.waitFor(names[0], "terminated")
        host.send("open \(refused)")
        try host.waitFor(refused, "didBecomeActive")
        host.closeInput()
        #expect(try host.waitForExit() == 1, "an app that could not launch (README.md, exit status 1)")
    }
}
