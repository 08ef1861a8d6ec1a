import AppHostRuntime
import Foundation

/// Collects the supervisor's events and lets the benchmark wait for one.
final class EventLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [(event: HostEvent, at: UInt64)] = []
    /// Where a wait that fails says so before the benchmark stops (a figure that silences
    /// standard error, the output flood's, gives its saved copy).
    var failureOutput: Int32 = 2

    func record(_ event: HostEvent) {
        let at = now()
        condition.lock()
        events.append((event, at))
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the next `name` event after index `after`; returns it with its arrival time.
    func next(_ name: String, after index: inout Int) -> (event: HostEvent, at: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let found = events[index...].firstIndex(where: { $0.event.event.rawValue == name }) {
                index = found + 1
                return events[found]
            }
            guard condition.wait(until: Date().addingTimeInterval(30)) else {
                let last = events.suffix(6).map { String(decoding: (try? JSONEncoder().encode($0.event)) ?? Data(), as: UTF8.self) }
                let message = "no \(name) event within 30 s; the last events:\n" + last.joined(separator: "\n")
                _ = Array((message + "\n").utf8).withUnsafeBytes { write(failureOutput, $0.baseAddress, $0.count) }
                fatalError(message)
            }
        }
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return events.count
    }
}
