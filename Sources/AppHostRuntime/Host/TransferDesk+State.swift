import Foundation
import AppHostProtocol

/// What the `TransferDesk` keeps, held privately by it: the records (in the store, each saved
/// as it changes, off the loop), what is owed to which run and the wakes for it
/// (`TransferDeliveries`), the credentials, the allowances. Its rules are in the
/// `TransferDesk+…` files; each takes the host's `Facts` and returns the desk's effects.
struct Transfers {
    typealias Effect = TransferDesk.Effect

    /// A transfer's strings are cut at these (a hostile app cannot make the store grow).
    static let limits = (session: 256, url: 8192, file: 4096, description: 1024, headers: 32, headerBytes: 8192)
    /// Transfers one app may have at once.
    static let maximumPerApp = 1000
    /// Challenges a transfer asks its app to answer before the host stops asking: a server
    /// that refuses every credential ends with its 401 as the response.
    static let maximumFailedCredentials = 5

    let store: TransferStore
    var records: [TransferRecord]
    /// The records as last handed to the store: a save writes only what differs from them.
    var saved: [String: TransferRecord]
    /// false: this host has no transfer service (a Supervisor made without one); transfers wait.
    let hasService: Bool
    var loadWarnings: [String]
    /// Transfers whose files go once the next save is on the disk.
    var fileRemovals: [String] = []
    /// Transfers created whose record is not on the disk yet: not started before it is.
    var unkept: Set<String> = []
    /// Uploads whose body is still being copied out of the container: not kept before it is.
    var copying: Set<String> = []
    /// What is owed to which run, and the wakes for it (TransferDeliveries).
    var deliveries = TransferDeliveries()
    var passQueued = false
    /// What each app's downloads may still write, by bundle identifier (its storage limit).
    var allowances: [String: TransferAllowance] = [:]
    /// The earliest begin date (scheduler time) a timer is armed for, if any.
    var beginArmed: Double?
    /// The credential each transfer answers its server's challenge with, by transfer: in
    /// memory only (a `.permanent` one is kept in `credentialStore` too).
    var credentials: [String: TransferCredential] = [:]
    /// The server certificate each transfer's app trusted (DER), by transfer: in memory only.
    var trusted: [String: Data] = [:]
    /// The credentials the apps gave as `.permanent`, by app and protection space (0600).
    let credentialStore: TransferCredentialStore

    init(stateDirectory: URL, hasService: Bool) {
        self.init(store: TransferStore(stateDirectory: stateDirectory), hasService: hasService)
    }

    init(store: TransferStore, hasService: Bool) {
        self.hasService = hasService
        self.store = store
        credentialStore = TransferCredentialStore(stateDirectory: store.directory.deletingLastPathComponent())
        (records, loadWarnings) = store.load()
        saved = Dictionary(records.map { ($0.id, $0) }) { $1 }
        // A transfer that ran when the host ended resumes from its part file.
        for index in records.indices where records[index].phase == .running { records[index].phase = .waiting }
    }

    /// The changes since the last save, by id (nil: removed), and the records as saved now.
    mutating func changes() -> [String: TransferRecord?] {
        var changes: [String: TransferRecord?] = [:]
        var current: [String: TransferRecord] = [:]
        current.reserveCapacity(records.count)
        for record in records where !copying.contains(record.id) {
            current[record.id] = record
            if saved[record.id] != record { changes[record.id] = .some(record) }
        }
        for id in saved.keys where current[id] == nil { changes[id] = .some(nil) }
        saved = current
        return changes
    }

    /// Hands what changed in the records to the store, which writes it off the loop.
    mutating func save() {
        store.write(changes(), removingFilesOf: fileRemovals)
        fileRemovals = []
    }

    // MARK: Look-ups

    func index(_ id: String) -> Int? { records.firstIndex { $0.id == id } }

    func index(app: String, session: String, task: Int) -> Int? {
        records.firstIndex { $0.app == app && $0.transfer.session == session && $0.transfer.task == task }
    }

    /// "download task 1 of session com.example.episodes (http://…)".
    static func label(_ record: TransferRecord) -> String {
        "\(record.transfer.kind.rawValue) task \(record.transfer.task) of session \(record.transfer.session) (\(record.transfer.url))"
    }

    /// Says `what` of the transfer.
    static func announce(_ record: TransferRecord, _ what: String) -> Effect {
        .announce(app: record.app, "\(label(record)) \(what)")
    }

    // MARK: Listings

    /// What a transfer waits for under the host's conditions now; nil: nothing, it may run.
    func waitsFor(_ record: TransferRecord, _ facts: TransferDesk.Facts) -> String? {
        if !hasService { return "a transfer service (this host was made without one)" }
        if let begin = record.transfer.earliestBegin, begin > facts.now {
            return "its earliest begin date, \(HostEvent.isoFormatter.string(from: Date(timeIntervalSince1970: begin)))"
        }
        if facts.network != .online { return "the network" }
        if record.transfer.isDiscretionary && facts.power != .plugged { return "external power (discretionary)" }
        if facts.app(record.app) == nil { return "its app to be installed" }
        return nil
    }

    func listing(_ record: TransferRecord, _ facts: TransferDesk.Facts) -> TransferListing {
        let state: String
        var waitingFor: String?
        switch record.phase {
        case .waiting:
            state = "waiting"
            waitingFor = waitsFor(record, facts) ?? "its turn"
        case .running:
            state = "running"
        case .finished:
            state = record.result?.errorCode == nil ? "finished" : "failed"
            waitingFor = "delivery to the app"
        case .challenged:
            state = "challenged"
            waitingFor = "the app's answer to an authentication challenge"
        case .kept:
            state = "kept"
            waitingFor = "a download that goes on from its resume data"
        }
        return TransferListing(
            app: record.app, name: facts.app(record.app)?.name ?? record.app, session: record.transfer.session, task: record.transfer.task,
            kind: record.transfer.kind.rawValue, url: record.transfer.url,
            bytesDone: record.transfer.kind == .download ? record.bytesReceived : record.bytesSent,
            bytesExpected: record.bytesExpected, state: state, waitingFor: waitingFor, discretionary: record.transfer.isDiscretionary,
            resumes: record.resumes)
    }

    /// A download's resume data, where it has bytes to go on from; nil otherwise.
    func resumeData(_ record: TransferRecord) -> Data? {
        guard record.transfer.kind == .download, record.bytesReceived > 0, store.fileBytes(record.id) > 0 else { return nil }
        return WireResumeData(
            transfer: record.id, url: record.transfer.url, method: record.transfer.method, headers: record.transfer.headers,
            bytes: record.bytesReceived).data
    }

    /// What the app's transfers may still write: its storage limit less what its container and
    /// its transfers' files hold now. One per app, set afresh at each use.
    mutating func allowance(for app: String, _ facts: TransferDesk.Facts) -> TransferAllowance {
        let (used, limit) = facts.usage(app)
        let files = records.filter { $0.app == app }.reduce(Int64(0)) { $0 + store.fileBytes($1.id) }
        let remaining = Int64(clamping: limit) - Int64(clamping: used) - files
        if let allowance = allowances[app], allowance.limit == limit {
            allowance.reset(remaining)
            return allowance
        }
        let allowance = TransferAllowance(remaining: remaining, limit: limit)
        allowances[app] = allowance
        return allowance
    }
}
