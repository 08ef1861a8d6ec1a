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
}
