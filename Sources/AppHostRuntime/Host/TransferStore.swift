import Foundation
import AppHostProtocol

/// One background transfer the host carries out for an app, as kept in the state directory:
/// it survives the app and the host (README.md, "Background transfers").
struct TransferRecord: Codable, Sendable, Equatable {
    enum Phase: String, Codable, Sendable {
        /// Not running: waiting for its conditions, or for its turn.
        case waiting
        case running
        /// Ended (completed or failed): `result` waits for delivery to the app.
        case finished
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
}

/// The transfers file (`transfers/transfers.json`), the part files of downloads and the bodies
/// of uploads beside it. Written whole, to a temporary file renamed over the old one and
/// synced, so a host killed at any moment leaves the old list or the new one.
struct TransferStore {
    let directory: URL
    private var file: URL { directory.appendingPathComponent("transfers.json") }

    init(stateDirectory: URL) {
        directory = stateDirectory.appendingPathComponent("transfers")
    }

    func partFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).part") }
    func bodyFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).body") }

    /// The records kept, or none and a warning if the file cannot be read.
    func load() -> ([TransferRecord], String?) {
        guard let data = try? Data(contentsOf: file) else { return ([], nil) }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return (try decoder.decode([TransferRecord].self, from: data), nil)
        } catch {
            return ([], "cannot read \(file.path) (\(error)); starting with no background transfers")
        }
    }

    func save(_ records: [TransferRecord]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(records)
        let temporary = directory.appendingPathComponent(".transfers.json.new")
        let handle = try FileHandle(forWritingTo: {
            _ = FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600])
            return temporary
        }())
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        if rename(temporary.path, file.path) != 0 {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
    }

    /// Removes a transfer's files.
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
