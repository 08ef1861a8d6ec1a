import Foundation
import Synchronization
public import AppHostRuntime

/// Everything a host has said: its events (its standard output, `--json`), the tail of its
/// standard error, and how it ended. Filled by reader threads; awaited by tests.
final class EventLog: Sendable {
    private struct State {
        var events: [HostEvent] = []
        /// Lines of standard output that are not events (never expected; kept for diagnosis).
        var unreadable: [String] = []
        var standardError: [UInt8] = []
        var exit: HostExit?
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private struct Waiter {
        /// Resumed once there are more events than this, the host has exited, or the wait ends.
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    /// The most standard error kept: its last 64 KiB.
    static let standardErrorLimit = 64 * 1024

    private let state = Mutex(State())

    // MARK: Filled by the readers

    func append(_ event: HostEvent) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let total = state.events.count
            return Self.take(&state) { $0.count < total }
        }
        ready.forEach { $0.resume() }
    }

    func appendUnreadable(_ line: String) {
        state.withLock { $0.unreadable.append(line) }
    }

    func appendStandardError(_ bytes: ArraySlice<UInt8>) {
        state.withLock { state in
            state.standardError += bytes
            if state.standardError.count > 2 * Self.standardErrorLimit {
                state.standardError.removeFirst(state.standardError.count - Self.standardErrorLimit)
            }
        }
    }

    func finish(_ exit: HostExit) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.exit = exit
            return Self.take(&state) { _ in true }
        }
        ready.forEach { $0.resume() }
    }

    // MARK: Read by tests

    var events: [HostEvent] { state.withLock { $0.events } }
    var count: Int { state.withLock { $0.events.count } }
    var exit: HostExit? { state.withLock { $0.exit } }
    var unreadable: [String] { state.withLock { $0.unreadable } }

    var standardError: String {
        state.withLock { String(decoding: $0.standardError.suffix(Self.standardErrorLimit), as: UTF8.self) }
    }

    func event(at index: Int) -> HostEvent? {
        state.withLock { index < $0.events.count ? $0.events[index] : nil }
    }

    /// The first event at or after `index` that satisfies `predicate`, with its index.
    func first(from index: Int, where predicate: (HostEvent) -> Bool) -> (index: Int, event: HostEvent)? {
        state.withLock { state in
            guard index < state.events.count else { return nil }
            return state.events[index...].indices.first { predicate(state.events[$0]) }.map { ($0, state.events[$0]) }
        }
    }

    /// The last `limit` events, of `app` only if given.
    func last(_ limit: Int, of app: String? = nil) -> [HostEvent] {
        let events = self.events
        return Array((app.map { app in events.filter { $0.concerns(app) } } ?? events).suffix(limit))
    }

    /// Returns once there are more than `count` events, the host has exited, `deadline` has
    /// passed, or the task is cancelled.
    func waitForMore(than count: Int, until deadline: ContinuousClock.Instant?) async {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.events.count > count || state.exit != nil { return true }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return false
                }
                if now { return continuation.resume() }
                // Armed once the waiter is in place, so that neither can miss the other.
                if Task.isCancelled { return resume(id) }
                if let deadline {
                    Task { [self] in
                        try? await Task.sleep(until: deadline)
                        resume(id)
                    }
                }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
    }

    /// Removes and returns the waiters `ready` picks.
    private static func take(_ state: inout State, _ ready: (Waiter) -> Bool) -> [CheckedContinuation<Void, Never>] {
        let picked = state.waiters.filter { ready($0.value) }
        for id in picked.keys { state.waiters.removeValue(forKey: id) }
        return picked.values.map(\.continuation)
    }
}

extension HostEvent {
    /// Whether the event is `app`'s: its bundle identifier or its CFBundleName, as commands take.
    func concerns(_ app: String) -> Bool {
        self.app == app || name == app || (name?.lowercased() == app.lowercased())
    }
}

extension TestHost {
    /// The host's events from its start, in order, as an asynchronous sequence that ends when
    /// the host exits. Each iteration starts again from the first event.
    ///
    ///     for await event in host.events where event.event == .suspended { break }
    public struct Events: AsyncSequence, Sendable {
        /// One event line of the host, decoded.
        public typealias Element = HostEvent
        let log: EventLog

        /// Reads the events in order, waiting for the next one while the host runs.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let log: EventLog
            var index = 0

            /// The next event; nil once the host has exited and every event is read, or when
            /// the task is cancelled.
            public mutating func next() async -> HostEvent? {
                while true {
                    if let event = log.event(at: index) {
                        index += 1
                        return event
                    }
                    if log.exit != nil || Task.isCancelled { return nil }
                    await log.waitForMore(than: index, until: nil)
                }
            }
        }

        /// An iterator from the host's first event.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(log: log) }
    }
}
