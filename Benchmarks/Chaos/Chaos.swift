// The fault-injection run (docs/storage.md, "What survives the host"): a host with apps that make work
// of every kind that must outlive it (background transfers, BGTaskScheduler requests, a fetch
// interval, scene sessions, location authorizations, containers and their images), killed with
// SIGKILL at a random moment, or in the middle of a store's write, or after one of its apps or
// its launch template was killed; then a new host on the same state directory, and the
// invariants checked:
//
//   - every transfer a host said it created completes and reaches its app exactly once;
//   - every task request a host said it took is still pending or has run, never both, never lost;
//   - every fetch interval, scene session and authorization a host said it kept is still kept;
//   - no process or mount of the dead host outlives the next host's start;
//   - the next host reads every store (nothing unreadable, nothing kept aside).
//
// Run: scripts/chaos [--iterations N] [--seed S] [--only I]. Not a test: a program beside the
// benchmark, whose every violation names the seed and iteration that reproduce it.

import ArgumentParser
import AppHostRuntime
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

@main
struct Chaos: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apphost-chaos",
        abstract: "Kills hosts at the moments that matter and checks that nothing they kept is lost.")

    @Option(help: "How many iterations (each a fresh state directory, two hosts).")
    var iterations = 20

    @Option(help: "The run's seed (default: random). Each iteration's choices follow from it.")
    var seed: UInt64?

    @Option(help: "Run only this iteration of the seed (to reproduce a violation).")
    var only: Int?

    @Option(help: "The apphost binary.")
    var apphost = ".build/debug/apphost"

    @Option(help: "Where the bundled apps are (the Probe fixture is the apps' base).")
    var apps = ".build/apps"

    @Flag(help: "Print each iteration's plan and what it saw.")
    var verbose = false

    @Flag(help: "Keep the directory of each iteration that found a violation (/tmp/apphost-chaos-PID-I), for a look.")
    var keep = false

    func run() throws {
        // A command written to a host just killed finds its standard input closed: an error to
        // ignore, not a signal that ends the run.
        signal(SIGPIPE, SIG_IGN)
        let seed = seed ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let server = try ChaosServer()
        let probe = URL(fileURLWithPath: apps).appendingPathComponent("Probe.app").standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: probe + "/Info.plist") else {
            throw ValidationError("\(probe) is missing: run scripts/chaos, which builds apphost and bundles the apps first")
        }
        let selected = only.map { [$0] } ?? Array(0..<iterations)
        var violations: [(Int, String)] = []
        var interrupted: [(Int, String)] = []
        let started = Date()
        for iteration in selected {
            // Each iteration's stream starts from a mix of the seed and its number: streams of
            // neighbouring iterations are not shifted copies of each other.
            var random = SplitMix(seed: SplitMix.mix(seed ^ SplitMix.mix(UInt64(iteration) &+ 1)))
            let run = Iteration(
                number: iteration, apphost: URL(fileURLWithPath: apphost).standardizedFileURL.path, probe: probe, server: server,
                verbose: verbose, keep: keep)
            let found = run.perform(&random)
            for finding in found where finding.hasPrefix(Iteration.interruptedDelivery) {
                interrupted.append((iteration, finding))
                say("chaos: \(finding) (--seed \(seed) --only \(iteration))")
            }
            for violation in found where !violation.hasPrefix(Iteration.interruptedDelivery) {
                violations.append((iteration, violation))
                say("chaos: violation (--seed \(seed) --only \(iteration)): \(violation)")
            }
            if verbose || (iteration + 1) % 10 == 0 {
                say("chaos: \(iteration + 1) iterations done, \(violations.count) violations, \(Int(Date().timeIntervalSince(started))) s")
            }
        }
        say("chaos: \(selected.count) iterations, \(violations.count) invariant violations (seed \(seed), \(Int(Date().timeIntervalSince(started))) s)"
            + (interrupted.isEmpty ? "" : "; \(interrupted.count) deliveries interrupted by the app's death inside its delegate (at most once)"))
        for (iteration, violation) in violations {
            say("  scripts/chaos --seed \(seed) --only \(iteration): \(violation)")
        }
        if !violations.isEmpty { throw ExitCode(1) }
    }
}

/// A small, seedable generator: every choice of an iteration follows from the seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// SplitMix64's finalizer: every bit of the input moves every bit of the output.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Prints a line at once, also into a file or a pipe: a long run shows where it is.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
