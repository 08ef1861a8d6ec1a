import Foundation
import Testing

/// The host prepares an app's container as root on a root host, in a directory the app owns:
/// it must never follow what the app planted there (issue 12, items 4 and 5).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ContainerTamperTests {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? Int)
    }

    /// Hole: after an app replaced `Library` with a link to a directory outside, the host made
    /// Caches, Preferences and Application Support there at the next launch; a dangling
    /// `Documents` link made the app unlaunchable.
    @Test func plantedLinksAreRemovedNotFollowed() throws {
        let scratch = try Scratch()
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.planter")
        let outside = scratch.url.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: container.appendingPathComponent("Library").path, withDestinationPath: outside.path)
        try FileManager.default.createSymbolicLink(
            atPath: container.appendingPathComponent("Documents").path, withDestinationPath: scratch.url.appendingPathComponent("nowhere").path)
        try Data("planted".utf8).write(to: container.appendingPathComponent("tmp"))

        let host = try HostSession([try scratch.bundle("Planter")], scratch: scratch)
        try host.waitFor("Planter", "didBecomeActive")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing was made through the link")
        for name in ["Library", "Library/Caches", "Documents", "tmp"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: container.appendingPathComponent(name).path)
            #expect(attributes[.type] as? FileAttributeType == .typeDirectory, "\(name) is a real directory")
        }
        #expect(FileManager.default.fileExists(atPath: container.appendingPathComponent("tmp.not-a-directory").path), "the file was kept, aside")
        // One warning per repair: Library and Documents were links, tmp a file.
        _ = try host.waitFor("three repairs", occurrence: 3) {
            $0.name == "Planter" && $0.event == "warning" && $0.detail?.hasPrefix("its container was tampered with: ") == true
        }
        // The app runs and can write its Documents.
        #expect(scratch.recorded("Planter").contains { $0.hasPrefix("didBecomeActive") })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Hole: containers were 0755 and reports 0644, readable (and a planted set-user-id binary
    /// runnable) by any local user.
    @Test func containersAndReportsAreTheirOwnersAlone() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Private")], scratch: scratch)
        try host.waitFor("Private", "didBecomeActive")
        host.send("terminate Private")
        let end = try host.waitFor("Private", "terminated")
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.private").path
        #expect(try mode(container) == 0o700)
        #expect(try mode(scratch.stateDirectory.appendingPathComponent("reports").path) == 0o700)
        #expect(try mode(try #require(end.report)) == 0o600)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }
}

/// Regression: a host that refused to start after setting up its timers (a state directory app
/// users cannot enter) crashed in libdispatch instead of saying why in one line.
@Suite(.timeLimit(.minutes(1)))
struct StartRefusalTests {
    @Test(.enabled(if: getuid() == 0, "needs root: only a root host runs apps under their own users"))
    func aStateDirectoryAppUsersCannotEnterIsOneLineAndStatusOne() throws {
        let scratch = try Scratch()
        let closed = scratch.url.appendingPathComponent("closed")
        try FileManager.default.createDirectory(at: closed.appendingPathComponent("state"), withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: closed.path)
        let result = try runApphost(["launch", "--state-dir", closed.appendingPathComponent("state").path, try scratch.bundle("Any").path])
        #expect(result.status == 1)
        #expect(!result.error.contains("crashed"), "stderr: \(result.error)")
        let lines = result.error.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("app users cannot reach their containers"), "stderr: \(result.error)")
    }
}
