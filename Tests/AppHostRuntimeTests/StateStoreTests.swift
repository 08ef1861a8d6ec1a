#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import AppHostSystem
import AppHostProtocol
@testable import AppHostRuntime

/// Every store of the state directory is written through `DurableFile` by a `StateStore` (or,
/// one file a record, the `TransferStore`): a writer killed at any step leaves the old contents
/// or the new ones, an unreadable file is kept aside with a warning, and saves leave the caller's
/// thread at once (docs/storage.md, "What survives the host").
@Suite struct StateStoreTests {
    struct Value: Codable, Equatable, Sendable {
        var name: String
        var numbers: [Int]
    }

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-store-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func aSaveReadsBackAndAMissingStoreIsEmptyWithoutAWarning() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = StateStore<Value>(json: directory.appendingPathComponent("nested/store.json").path, what: "the test store")
        #expect(store.load().value == nil && store.load().warning == nil)
        let value = Value(name: "one", numbers: [1, 2, 3])
        store.save(value)
        store.flush()
        #expect(store.load().value == value && store.load().warning == nil)
        #expect(!FileManager.default.fileExists(atPath: store.file.temporaryPath), "no temporary file is left")
    }

    @Test(arguments: ["{\"name\": 3", "", "\u{0}\u{1}garbage"])
    func anUnreadableStoreIsKeptAsideWithAWarningAndNeverOverwritten(contents: String) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.json").path
        let store = StateStore<Value>(json: path, what: "the test store")
        for attempt in 1...2 {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
            let (value, warning) = store.load()
            #expect(value == nil)
            #expect(warning?.hasPrefix("the test store \(path) is unreadable") == true)
            #expect(warning?.contains("kept it as store.json.unreadable-\(attempt)") == true, "\(warning ?? "")")
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(path).unreadable-\(attempt)")) == Data(contents.utf8))
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        store.save(Value(name: "after", numbers: []))
        store.flush()
        #expect(store.load().value?.name == "after")
    }

    /// A writer killed (SIGKILL) at each step of a replacement: before the rename, the old
    /// contents; after it, the new. A real process, killed for real (an exit test).
    @Test(arguments: [("written half", false), ("synced", false), ("renamed", true)])
    func aWriterKilledAtAnyStepLeavesTheOldStoreOrTheNew(step: String, expectNew: Bool) async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.json").path
        let old = Value(name: "old", numbers: Array(0..<1000))
        try StateStore<Value>(json: path, what: "the test store").saveNow(old)
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String, step = step as String] in
            let store = StateStore<Value>(json: path, what: "the test store", stepObserver: { reached in
                if reached == step { kill(getpid(), SIGKILL) }
            })
            try? store.saveNow(Value(name: "new", numbers: Array(0..<2000)))
        }
        let loaded = StateStore<Value>(json: path, what: "the test store").load()
        #expect(loaded.warning == nil)
        #expect(loaded.value?.name == (expectNew ? "new" : "old"))
        #expect(loaded.value?.numbers.count == (expectNew ? 2000 : 1000))
    }

    @Test func aBurstOfSavesIsWrittenFewerTimesAndTheLastValueWins() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writes = Atomic(0)
        let store = StateStore<Value>(
            json: directory.appendingPathComponent("store.json").path, what: "the test store",
            stepObserver: { if $0 == "renamed" { writes.add(1, ordering: .relaxed) } })
        let done = Atomic(0)
        for index in 0..<500 {
            store.save(Value(name: "v\(index)", numbers: Array(0..<200))) { done.add(1, ordering: .relaxed) }
        }
        store.flush()
        #expect(store.load().value?.name == "v499")
        #expect(done.load(ordering: .relaxed) == 500, "every save's completion ran")
        #expect(writes.load(ordering: .relaxed) < 500, "coalesced: \(writes.load(ordering: .relaxed)) writes")
    }

    @Test func aCompletionRunsOnceItsValueIsOnTheDisk() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.json").path
        let store = StateStore<Value>(json: path, what: "the test store")
        let seen = Mutex<Value?>(nil)
        store.save(Value(name: "kept", numbers: [7])) {
            seen.withLock { $0 = StateStore<Value>(json: path, what: "the test store").load().value }
        }
        store.flush()
        #expect(seen.withLock { $0 } == Value(name: "kept", numbers: [7]))
    }

    // MARK: The transfers' store

    static func record(_ id: String, _ created: Double) -> TransferRecord {
        TransferRecord(
            id: id, app: "com.example.app",
            transfer: .init(session: "s", task: 1, kind: .download, url: "http://example.com/\(id)"),
            created: Date(timeIntervalSince1970: created))
    }

    @Test func transfersAreKeptOneFileEachAndOnlyWhatChangedIsWritten() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var transfers = Transfers(stateDirectory: directory, hasService: false)
        transfers.records = [Self.record("b", 2), Self.record("a", 1)]
        transfers.store.write(transfers.changes())
        transfers.store.flush()
        let folder = directory.appendingPathComponent("transfers").path
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["a.json", "b.json"])
        transfers.records[0].bytesReceived = 10
        #expect(Array(transfers.changes().keys) == ["b"], "only the changed record is written")
        transfers.records.removeAll { $0.id == "a" }
        let removal = transfers.changes()
        #expect(removal.count == 1 && removal["a"] == .some(nil))
        transfers.store.write(removal)
        transfers.store.flush()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["b.json"])
        #expect(Transfers(stateDirectory: directory, hasService: false).records.map(\.id) == ["b"])
    }

    @Test func anUnreadableTransferIsKeptAsideAndAnEarlierHostsListIsTakenIn() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("transfers")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try encoder.encode([Self.record("old1", 1), Self.record("old2", 2)]).write(to: folder.appendingPathComponent("transfers.json"))
        try Data("{\"id\":".utf8).write(to: folder.appendingPathComponent("torn.json"))
        // A body copied for an upload whose record never reached the disk, and a kept one's part.
        try Data("x".utf8).write(to: folder.appendingPathComponent("orphan.body"))
        try Data("y".utf8).write(to: folder.appendingPathComponent("old1.part"))
        let loaded = Transfers(stateDirectory: directory, hasService: false)
        #expect(loaded.records.map(\.id) == ["old1", "old2"])
        #expect(loaded.loadWarnings.count == 1)
        #expect(loaded.loadWarnings.first?.contains("kept it as torn.json.unreadable-1") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["old1.json", "old1.part", "old2.json", "torn.json.unreadable-1"])
    }
}
