#if canImport(Glibc)
import Glibc
#endif
package import Foundation
import Synchronization
package import AppHostSystem

/// One store of the host's state directory (docs/storage.md, "What survives the host"): the scheduler's
/// requests, the scene sessions, the location authorizations, the app users, each background
/// transfer. Every store is written the same way, through `DurableFile` (temporary file, fsync,
/// rename, fsync of the directory), on a writer queue of its own, never on the host's loop.
///
/// Saves are coalesced: a save made while an earlier one waits replaces it, so a burst of
/// changes costs one write. `flush` waits for what is queued (at shutdown); `saveNow` writes on
/// the caller's thread, for a change that must be durable before what follows it.
///
/// A store that exists but cannot be read or decoded is never overwritten: `load` moves it aside
/// (`NAME.unreadable-N`) and says so in its warning, and the host starts without it.
package final class StateStore<Value: Sendable>: Sendable {
    /// The file.
    package let file: DurableFile
    /// What the store holds, for messages: "the scheduler's store".
    package let what: String
    private let encode: @Sendable (Value) throws -> [UInt8]
    private let decode: @Sendable ([UInt8]) throws -> Value
    /// Told of a write that failed (from the writer's thread).
    private let failed: Mutex<(@Sendable (String) -> Void)?>
    private let writer: DispatchQueue
    private let pending = Mutex<Pending>(Pending())

    private struct Pending {
        /// The value to write next; nil: nothing waits.
        var value: Value?
        /// Whether a write of `value` is queued on the writer.
        var queued = false
        /// Called once `value` (or a later value) is written.
        var completions: [@Sendable () -> Void] = []
    }

    package init(
        path: String, what: String, stepObserver: (@Sendable (String) -> Void)? = nil,
        encode: @escaping @Sendable (Value) throws -> [UInt8], decode: @escaping @Sendable ([UInt8]) throws -> Value
    ) {
        file = DurableFile(path: path, stepObserver: stepObserver)
        self.what = what
        self.encode = encode
        self.decode = decode
        failed = Mutex(nil)
        writer = DispatchQueue(label: "apphost.store.\(URL(fileURLWithPath: path).lastPathComponent)")
    }

    /// Where a write that fails is reported (the host publishes a warning).
    package func onFailure(_ report: @escaping @Sendable (String) -> Void) {
        failed.withLock { $0 = report }
    }

    /// The stored value; nil and no warning if there is none. A file that cannot be read or
    /// decoded is moved aside, and the warning names where it went.
    package func load() -> (value: Value?, warning: String?) {
        let bytes: [UInt8]
        do {
            guard let read = try file.read() else { return (nil, nil) }
            bytes = read
        } catch {
            return (nil, "cannot read \(what) \(file.path) (\(error)); starting without it")
        }
        do {
            return (try decode(bytes), nil)
        } catch {
            let reason = bytes.isEmpty ? "it is empty" : "\(error)"
            guard let aside = file.keepAside() else {
                return (nil, "\(what) \(file.path) is unreadable (\(reason)) and could not be moved aside; starting without it")
            }
            return (nil, "\(what) \(file.path) is unreadable (\(reason)); kept it as \(URL(fileURLWithPath: aside).lastPathComponent) and started without it")
        }
    }

    /// Saves `value` on the writer's queue; a save not yet written is replaced by this one.
    /// `then` runs on the writer's thread once the value (or a later one) is on the disk, or
    /// its write failed (reported to `onFailure`): what must follow the save, such as telling
    /// anyone that a change is kept, goes there.
    package func save(_ value: Value, then: (@Sendable () -> Void)? = nil) {
        let enqueue = pending.withLock { pending -> Bool in
            pending.value = value
            if let then { pending.completions.append(then) }
            guard !pending.queued else { return false }
            pending.queued = true
            return true
        }
        guard enqueue else { return }
        writer.async { [self] in writePending() }
    }

    /// Writes `value` now, on the caller's thread, after whatever was queued before it.
    package func saveNow(_ value: Value) throws {
        // Saves queued before it are written first (the writer's queue is in order).
        try writer.sync { try write(value) }
    }

    /// Returns once every save made before the call is written.
    package func flush() {
        writer.sync {}
    }

    private func writePending() {
        let (value, completions) = pending.withLock { pending -> (Value?, [@Sendable () -> Void]) in
            pending.queued = false
            defer {
                pending.value = nil
                pending.completions = []
            }
            return (pending.value, pending.completions)
        }
        if let value {
            do {
                try write(value)
            } catch {
                let report = failed.withLock { $0 }
                report?("cannot save \(what) \(file.path): \(error)")
            }
        }
        for completion in completions { completion() }
    }

    private func write(_ value: Value) throws {
        let bytes = try encode(value)
        let directory = file.directory
        if access(directory, F_OK) != 0 {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try file.replace(with: bytes)
    }
}

extension StateStore where Value: Codable {
    /// A store of a Codable value as JSON with sorted keys (a diff of two states reads well);
    /// `readable`: indented, for the small stores a person may open; `isoDates`: dates as
    /// ISO 8601 text rather than seconds since 2001.
    package convenience init(
        json path: String, what: String, readable: Bool = false, isoDates: Bool = false,
        stepObserver: (@Sendable (String) -> Void)? = nil
    ) {
        self.init(
            path: path, what: what, stepObserver: stepObserver,
            encode: { value in
                let encoder = JSONEncoder()
                encoder.outputFormatting = readable ? [.prettyPrinted, .sortedKeys] : [.sortedKeys]
                if isoDates { encoder.dateEncodingStrategy = .iso8601 }
                return Array(try encoder.encode(value))
            },
            decode: { bytes in
                let decoder = JSONDecoder()
                if isoDates { decoder.dateDecodingStrategy = .iso8601 }
                return try decoder.decode(Value.self, from: Data(bytes))
            })
    }
}
