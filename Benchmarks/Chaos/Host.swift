import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One event line of `apphost launch --json`.
struct Event: @unchecked Sendable {
    let fields: [String: Any]
    var event: String { fields["event"] as? String ?? "" }
    var name: String { fields["name"] as? String ?? "" }
    var detail: String { fields["detail"] as? String ?? "" }
    var pid: Int32? { (fields["pid"] as? Int).map(Int32.init) }
}

/// A host under test: `apphost launch --json` with its standard input open for commands, its
/// events collected as they come.
final class ChaosHost: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let condition = NSCondition()
    private var lines: [Event] = []
    private var closed = false

    init(apphost: String, stateDirectory: String, bundles: [String], arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: apphost)
        // The transfers go to the run's own server on the loopback interface, which the host
        // refuses unless told (docs/transfers.md, "Background transfers").
        process.arguments = ["launch", "--json", "--state-dir", stateDirectory, "--allow-transfers-to", "127.0.0.1"] + arguments + bundles
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        Thread.detachNewThread { [self] in
            let handle = output.fileHandleForReading
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 10) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] {
                        condition.withLock { lines.append(Event(fields: object)) }
                        condition.broadcast()
                    }
                }
            }
            condition.withLock { closed = true }
            condition.broadcast()
        }
    }

    var pid: Int32 { process.processIdentifier }

    var events: [Event] { condition.withLock { lines } }

    func send(_ command: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// The first event that satisfies `predicate`, waiting up to `timeout` seconds for it.
    @discardableResult
    func waitFor(_ timeout: Double, _ predicate: (Event) -> Bool) -> Event? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let found = lines.first(where: predicate) { return found }
            if closed || !condition.wait(until: deadline) { return lines.first(where: predicate) }
        }
    }

    func kill() {
        Glibc.kill(pid, SIGKILL)
    }

    /// Waits for the host to end (killing it after `timeout` seconds).
    func waitForExit(timeout: Double = 20) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill() }
        process.waitUntilExit()
    }
}

/// Calls `action` the moment a file whose name ends with `.new` (a store's replacement being
/// written, DurableFile) is created in `directories` for the `nth` time: how a host is killed in
/// the middle of a store's write, from outside, at the point that matters.
final class StoreWriteWatch: @unchecked Sendable {
    private let fd: Int32
    private var stopped = false

    init?(directories: [String], nth: Int, action: @escaping @Sendable () -> Void) {
        fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        for directory in directories {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = inotify_add_watch(fd, directory, UInt32(IN_CREATE))
        }
        let fd = fd
        Thread.detachNewThread { [self] in
            var seen = 0
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !stopped {
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&poll, 1, 100) > 0 else { continue }
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let length = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 12, as: UInt32.self) }
                    let nameStart = offset + MemoryLayout<inotify_event>.size
                    let nameBytes = buffer[nameStart..<min(count, nameStart + Int(length))].prefix { $0 != 0 }
                    if String(decoding: nameBytes, as: UTF8.self).hasSuffix(".new") {
                        seen += 1
                        if seen == nth {
                            action()
                            stopped = true
                            break
                        }
                    }
                    offset = nameStart + Int(length)
                }
            }
            close(fd)
        }
    }

    func stop() { stopped = true }
}
