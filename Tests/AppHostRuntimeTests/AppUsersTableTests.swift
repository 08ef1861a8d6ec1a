import Foundation
import Testing
@testable import AppHostRuntime

/// The app-user table is written by hand (AppUsers.json, for launch time at thousands of apps):
/// it must stay JSON that reads back as the same table, whatever the identifiers hold.
@Suite struct AppUsersTableTests {
    @Test func theHandWrittenTableReadsBackTheSame() throws {
        var table = AppUsers.Table()
        for index in 0..<2000 { table.apps["com.example.app\(index)"] = 2_000_000_000 + UInt32(index) }
        table.apps["quote\"back\\slash\u{1}tab\tline\nünï"] = 7
        table.groups["group.example"] = 2_000_002_000
        let decoded = try JSONDecoder().decode(AppUsers.Table.self, from: AppUsers.json(table))
        #expect(decoded == table)
        #expect(try JSONDecoder().decode(AppUsers.Table.self, from: AppUsers.json(AppUsers.Table())) == AppUsers.Table())
    }

    /// Installed apps get their uids at once, written together; the first id asked for after
    /// that writes them before anything runs under one. Ids go up from the range's start, each
    /// given once, the ones already held skipped, and a full range says so.
    @Test func reservationsAreWrittenOnceAndBeforeUse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("app-users-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("app-users.json")
        let range: ClosedRange<UInt32> = 2_100_000_000...2_100_000_003
        var users = AppUsers(stateDirectory: directory, range: range)
        try users.reserve(app: "com.example.first")
        try users.reserve(app: "com.example.second")
        try users.reserve(app: "com.example.first")
        #expect(users.hasUnsavedReservations)
        #expect(!FileManager.default.fileExists(atPath: file.path), "reserving writes nothing")
        #expect(try users.uid(forApp: "com.example.second") == 2_100_000_001)
        #expect(!users.hasUnsavedReservations)
        var written = try JSONDecoder().decode(AppUsers.Table.self, from: Data(contentsOf: file))
        #expect(written.apps == ["com.example.first": 2_100_000_000, "com.example.second": 2_100_000_001])

        // Read back, the table's ids are not given again.
        var again = AppUsers(stateDirectory: directory, range: range)
        #expect(try again.gid(forGroup: "group.example") == 2_100_000_002)
        #expect(try again.uid(forApp: "com.example.third") == 2_100_000_003)
        #expect(throws: SupervisorError.self) { try again.uid(forApp: "com.example.fourth") }
        written = try JSONDecoder().decode(AppUsers.Table.self, from: Data(contentsOf: file))
        #expect(written.groups == ["group.example": 2_100_000_002] && written.apps.count == 3)
    }
}
