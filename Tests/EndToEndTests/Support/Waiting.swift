import Foundation
import Testing

// Waits for conditions that no event announces: a file another process writes, a count in
// /proc, a line an app records. The host's events are waited on with `HostSession.waitFor`,
// which wakes on each event; these check their condition every 10 ms instead, and are the one
// place in the end-to-end tests that sleeps to wait (tests never sleep for a fixed time
// hoping that something has happened by then).

/// Checks `condition` every 10 ms until it holds (true) or `timeout` seconds have passed
/// (false, after one last look). For a test that then asserts with a message of its own.
func becomesTrue(within timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        guard Date() < deadline else { return condition() }
        usleep(10_000)
    }
    return true
}

/// Waits for a condition the test cannot block on (a file another process writes), checking it
/// every 10 ms; fails the test, naming `what`, after `timeout`.
func waitUntil(_ what: String, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) throws {
    guard !becomesTrue(within: timeout, condition) else { return }
    Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
    throw WaitFailed()
}
