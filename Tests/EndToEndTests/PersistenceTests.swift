import Foundation
import Testing

/// What survives the host (docs/storage.md): a store that cannot be read is kept aside with a warning
/// that names it, never overwritten, and the host starts.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PersistenceTests {
    @Test(arguments: ["{\"apps\": [3", "", "\u{0}garbage\u{7f}"])
    func everyUnreadableStoreIsKeptAsideAndTheHostStarts(contents: String) throws {
        let scratch = try Scratch()
        let state = scratch.stateDirectory
        let stores = [
            "background-tasks.json", "scene-sessions.json", "location-authorization.json", "transfers/torn.json",
        ] + (getuid() == 0 ? ["app-users.json"] : [])
        try FileManager.default.createDirectory(at: state.appendingPathComponent("transfers"), withIntermediateDirectories: true)
        for store in stores { try Data(contents.utf8).write(to: state.appendingPathComponent(store)) }

        let host = try HostSession([try scratch.bundle("Front")], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")
        let warnings = host.allEvents.filter { $0.event == "warning" }.compactMap(\.detail)
        for store in stores {
            let path = state.appendingPathComponent(store).path
            let aside = URL(fileURLWithPath: path).lastPathComponent + ".unreadable-1"
            #expect(warnings.contains { $0.contains(path) && $0.contains("kept it as \(aside)") }, "\(store): \(warnings)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".unreadable-1")) == Data(contents.utf8), "\(store) kept as it was")
        }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}
