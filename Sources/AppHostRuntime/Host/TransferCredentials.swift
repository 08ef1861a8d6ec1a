import Foundation
import Synchronization
import AppHostProtocol

/// The credentials apps gave for their background transfers with persistence `.permanent`
/// (docs/transfers.md, "Background transfers"): each kept for the app that gave it and the protection
/// space it answered (scheme, host, port, realm), and used for that app's next transfer there
/// without asking it. A file of the state directory, `STATE/transfer-credentials.json`, written
/// through `StateStore` (mode 0600, off the loop); never in a transfer's record, never sent back
/// to an app, never shared between apps.
final class TransferCredentialStore: Sendable {
    struct Space: Codable, Sendable, Hashable {
        var app: String
        var method: WireChallenge.Method
        var host: String
        var port: Int
        var `protocol`: String
        var realm: String?
    }

    struct Entry: Codable, Sendable, Equatable {
        var space: Space
        var user: String
        var password: String
    }

    /// At most this many are kept in all (the oldest go first): a hostile app cannot grow the file.
    static let maximumEntries = 256

    private let store: StateStore<[Entry]>
    private let entries: Mutex<[Entry]>

    init(stateDirectory: URL) {
        store = StateStore(json: stateDirectory.appendingPathComponent("transfer-credentials.json").path, what: "the transfers' credentials")
        entries = Mutex(store.load().value ?? [])
    }

    func credential(for space: Space) -> TransferCredential? {
        entries.withLock { $0.last { $0.space == space } }.map { TransferCredential(user: $0.user, password: $0.password, method: $0.space.method) }
    }

    /// Keeps (or replaces) the space's credential.
    func keep(_ credential: TransferCredential, for space: Space) {
        let snapshot = entries.withLock { entries -> [Entry] in
            entries.removeAll { $0.space == space }
            entries.append(Entry(space: space, user: credential.user, password: credential.password))
            if entries.count > Self.maximumEntries { entries.removeFirst(entries.count - Self.maximumEntries) }
            return entries
        }
        store.save(snapshot)
    }

    /// Forgets the space's credential (one the server refused).
    func forget(_ space: Space) {
        let snapshot = entries.withLock { entries -> [Entry]? in
            let before = entries.count
            entries.removeAll { $0.space == space }
            return entries.count == before ? nil : entries
        }
        if let snapshot { store.save(snapshot) }
    }

    /// Forgets every credential of the app (`apphost erase`), on the disk before it returns;
    /// returns how many there were.
    func erase(app: String) throws -> Int {
        let (snapshot, removed) = entries.withLock { entries -> ([Entry], Int) in
            let before = entries.count
            entries.removeAll { $0.space.app == app }
            return (entries, before - entries.count)
        }
        if removed > 0 { try store.saveNow(snapshot) }
        return removed
    }

    func flush() { store.flush() }
}
