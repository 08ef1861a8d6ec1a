#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostProtocol
import AppHostSystem

/// One background transfer the host carries out for an app, as kept in the state directory:
/// it survives the app and the host (docs/transfers.md, "Background transfers").
struct TransferRecord: Codable, Sendable, Equatable {
    enum Phase: String, Codable, Sendable {
        /// Not running: waiting for its conditions, or for its turn.
        case waiting
        case running
        /// Ended (completed or failed): `result` waits for delivery to the app.
        case finished
        /// The server asked for authentication: `result` (its `challenge`) waits for the app's answer.
        case challenged
        /// Delivered as cancelled or failed with resume data: only its part file is kept, for a
        /// download that goes on from it (`downloadTask(withResumeData:)`).
        case kept
    }

    /// Names its files in the store's directory.
    var id: String
    /// The app's bundle identifier.
    var app: String
    var transfer: WireTransfer
    var phase: Phase = .waiting
    var bytesReceived: Int64 = 0
    var bytesSent: Int64 = 0
    var bytesExpected: Int64?
    /// The ETag or Last-Modified of a download's first response, for If-Range on a resume.
    var validator: String?
    /// Resumes with a Range request (after a dropped connection or a restart of the host).
    var resumes = 0
    var result: WireTransferEvent?
    var created: Date
    /// The challenges answered with a credential that then failed (`previousFailureCount`).
    var failedCredentials: Int?
    /// The app chose default handling for a challenge: a 401 is the response, not a challenge.
    var challengeDeclined: Bool?

    /// Whether the app is owed a delivery of it: its end, or a challenge.
    var isOwed: Bool { phase == .finished || phase == .challenged }
    /// Whether it no longer runs nor waits to.
    var isDone: Bool { phase == .finished || phase == .challenged || phase == .kept }
}

/// The background transfers kept in the state directory (`STATE/transfers/`): each record in a
/// file of its own (`ID.json`), beside the part file of a download (`ID.part`) and the body of an
/// upload (`ID.body`). A change writes the records that changed, each through `DurableFile`, on
/// a writer queue of the store's own: never on the host's loop, and at a cost that does not grow
/// with the number of transfers kept. Changes made while a write is under way are coalesced.
final class TransferStore: Sendable {
    let directory: URL
    private let writer = DispatchQueue(label: "apphost.store.transfers")
    private let pending = Mutex<Pending>(Pending())
    /// Told of a write that failed (from the writer's thread).
    private let failed = Mutex<(@Sendable (String) -> Void)?>(nil)

    private struct Pending {
        /// By id: the record to write, or nil to remove it.
        var changes: [String: TransferRecord?] = [:]
        /// Transfers whose part file and body are removed once the changes are written.
        var fileRemovals: [String] = []
        var queued = false
        var completions: [@Sendable () -> Void] = []
    }

    /// Makes the directory now: a download's part file is opened in it before any record is.
    init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("transfers")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func partFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).part") }
    func bodyFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).body") }

    /// What the transfer's part file and body take on the disk (allocated blocks, as a storage
    /// limit counts them).
    func fileBytes(_ id: String) -> Int64 {
        [partFile(id), bodyFile(id)].reduce(0) { total, file in
            var info = stat()
            return stat(file.path, &info) == 0 ? total + Int64(info.st_blocks) * 512 : total
        }
    }
    private func recordFile(_ id: String) -> DurableFile { DurableFile(path: directory.appendingPathComponent("\(id).json").path) }

    /// Where a write that fails is reported (the host publishes a warning).
    func onFailure(_ report: @escaping @Sendable (String) -> Void) {
        failed.withLock { $0 = report }
    }

    /// The records kept, oldest first, and a warning for each file that could not be read
    /// (kept aside as `ID.json.unreadable-N`). A list written by an earlier host
    /// (`transfers.json`) is taken in and split into records.
    func load() -> (records: [TransferRecord], warnings: [String]) {
        var records: [TransferRecord] = []
        var warnings: [String] = []
        let legacy = StateStore<[TransferRecord]>(
            json: directory.appendingPathComponent("transfers.json").path, what: "the background transfers", isoDates: true)
        let (old, oldWarning) = legacy.load()
        warnings += oldWarning.map { [$0] } ?? []
        if let old {
            for record in old { try? recordFile(record.id).replace(with: Self.encode(record)) }
            try? legacy.file.remove()
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".json") }
        for name in names.sorted() {
            let file = DurableFile(path: directory.appendingPathComponent(name).path)
            do {
                guard let bytes = try file.read() else { continue }
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .iso8601
                records.append(try decoder.decode(TransferRecord.self, from: Data(bytes)))
            } catch {
                let aside = file.keepAside().map { URL(fileURLWithPath: $0).lastPathComponent } ?? "where it was"
                warnings.append("the background transfer \(file.path) is unreadable (\(error)); kept it as \(aside) and started without it")
            }
        }
        // A part file or body whose record never reached the disk (a host killed between copying
        // an upload's body and keeping its record) belongs to nothing: it goes.
        let kept = Set(records.map(\.id))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in files where name.hasSuffix(".part") || name.hasSuffix(".body") {
            let id = String(name.dropLast(5))
            if !kept.contains(id) { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
        }
        return (records.sorted { ($0.created, $0.id) < ($1.created, $1.id) }, warnings)
    }

    /// Writes `changes` (a record by id, or nil to remove one) off the caller's thread, in order
    /// with earlier changes, then removes the files of `fileRemovals`: a transfer's files go only
    /// once the record that no longer needs them is on the disk (a host killed in between finds
    /// the files its records name). `then` runs on the writer's thread once all that is done.
    func write(_ changes: [String: TransferRecord?], removingFilesOf fileRemovals: [String] = [], then: (@Sendable () -> Void)? = nil) {
        guard !changes.isEmpty || !fileRemovals.isEmpty || then != nil else { return }
        let enqueue = pending.withLock { pending -> Bool in
            pending.changes.merge(changes) { $1 }
            pending.fileRemovals += fileRemovals
            if let then { pending.completions.append(then) }
            guard !pending.queued else { return false }
            pending.queued = true
            return true
        }
        if enqueue { writer.async { [self] in writePending() } }
    }

    /// Returns once every change made before the call is written.
    func flush() {
        writer.sync {}
    }

    private func writePending() {
        let (changes, fileRemovals, completions) = pending.withLock { pending in
            defer { pending = Pending() }
            return (pending.changes, pending.fileRemovals, pending.completions)
        }
        if !changes.isEmpty, access(directory.path, F_OK) != 0 {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        for (id, record) in changes {
            do {
                if let record {
                    try recordFile(id).replace(with: Self.encode(record))
                } else {
                    try recordFile(id).remove()
                }
            } catch {
                failed.withLock { $0 }?("cannot save the background transfer \(id): \(error)")
            }
        }
        for id in fileRemovals { removeFiles(id) }
        for completion in completions { completion() }
    }

    private static func encode(_ record: TransferRecord) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array((try? encoder.encode(record)) ?? Data())
    }

    /// Removes every transfer of the app (records and files) now, for `apphost erase` while no
    /// host runs; returns how many.
    func erase(app: String) -> Int {
        let mine = load().records.filter { $0.app == app }
        for record in mine {
            try? recordFile(record.id).remove()
            removeFiles(record.id)
        }
        return mine.count
    }

    /// Removes a transfer's files now (one never kept); a kept one's go with `write`.
    func removeFiles(_ id: String) {
        try? FileManager.default.removeItem(at: partFile(id))
        try? FileManager.default.removeItem(at: bodyFile(id))
    }
}

/// One line of `transfers`, of `ps --json`'s apps and of a report: a transfer and where it stands.
public struct TransferListing: Sendable, Equatable, Codable {
    /// The app's bundle identifier (`app` in every event) and its name.
    public var app: String
    public var name: String
    public var session: String
    public var task: Int
    /// download or upload.
    public var kind: String
    public var url: String
    public var bytesDone: Int64
    public var bytesExpected: Int64?
    /// waiting, running, finished (not yet delivered), or failed (not yet delivered).
    public var state: String
    /// What it waits for: "the network", "external power (discretionary)", "delivery to the app".
    public var waitingFor: String?
    public var discretionary: Bool
    /// Resumes with a Range request so far.
    public var resumes: Int
}
