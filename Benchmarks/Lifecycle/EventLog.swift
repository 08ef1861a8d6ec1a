import AppHostRuntime
import Foundation

/// Collects the supervisor's events and lets the benchmark wait for one.
final class EventLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [(event: HostEvent, at: UInt64)] = []

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
                fatalError("no \(name) event within 30 s; the last events:\n" + last.joined(separator: "\n"))
            }
        }
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return events.count
    }
}
