import AppHostSystem
import Foundation
import Synchronization

/// The host's standard output, written by a thread of its own from a bounded queue: the host's
/// loop, which publishes every event, never waits on whoever reads it (a terminal paused with
/// Ctrl-S, a pipe nobody drains) and so never holds up a watchdog. Past `limit` lines waiting,
/// new lines are dropped and counted; once the reader catches up, one line says how many.
final class OutputQueue: Sendable {
    /// Standard output, for `apphost launch`'s events and command output.
    static let standardOutput = OutputQueue(fd: 1)

    /// Lines that may wait: a reader that falls this far behind loses lines, never the host time.
    static let limit = 50_000

    private struct State {
        var lines: [String] = []
        var dropped = 0
        var writing = false
        /// The reader went away (EPIPE): nothing more is written.
        var gone = false
        var onGone: (@Sendable () -> Void)?
    }

    private let fd: Int32
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let idle = NSCondition()

    private init(fd: Int32) {
        self.fd = fd
        Thread.detachNewThread { [self] in run() }
    }

    /// `gone` runs once, on the writer's thread, when the reader has gone away.
    func whenGone(_ gone: @escaping @Sendable () -> Void) {
        state.withLock { $0.onGone = gone }
    }

    /// Queues a line (its newline added). False once the reader is gone.
    @discardableResult
    func write(_ line: String) -> Bool {
        let (accepted, signal) = state.withLock { state -> (Bool, Bool) in
            guard !state.gone else { return (false, false) }
            guard state.lines.count < Self.limit else {
                state.dropped += 1
                return (true, false)
            }
            state.lines.append(line)
            return (true, state.lines.count == 1 && !state.writing)
        }
        if signal { wake.signal() }
        return accepted
    }

    /// Returns once every queued line is written (or the reader is gone), or after `timeout`
    /// seconds: before the process exits.
    func drain(timeout: Double = 5) {
        let deadline = Date().addingTimeInterval(timeout)
        idle.lock()
        defer { idle.unlock() }
        while state.withLock({ !$0.gone && ($0.writing || !$0.lines.isEmpty) }) {
            if !idle.wait(until: deadline) { return }
        }
    }

    private func run() {
        while true {
            let (lines, dropped) = state.withLock { state -> ([String], Int) in
                defer {
                    state.lines = []
                    state.dropped = 0
                }
                state.writing = !state.lines.isEmpty || state.dropped > 0
                return (state.lines, state.dropped)
            }
            if lines.isEmpty && dropped == 0 {
                idle.lock()
                idle.broadcast()
                idle.unlock()
                wake.wait()
                continue
            }
            var text = lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
            if dropped > 0 { text += "apphost: \(dropped) line\(dropped == 1 ? "" : "s") of output dropped: standard output was not read fast enough\n" }
            let written = writeStandardOutput(text)
            let gone = state.withLock { state -> (@Sendable () -> Void)? in
                state.writing = false
                guard !written, !state.gone else { return nil }
                state.gone = true
                state.lines = []
                return state.onGone ?? {}
            }
            gone?()
        }
    }
}
