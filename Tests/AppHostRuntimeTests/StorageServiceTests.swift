#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import AppHostRuntime

/// StorageService's rules without a host: who owns an app's containers, and storage pressure's
/// purges (which wait for an app's process, and never follow a link out of its container).
@Suite struct StorageServiceTests {
    private let files = TemporaryFiles()

    private func bundle(_ name: String, groups: [String] = []) throws -> AppBundle {
        let url = try files.url("bundles/\(name).app")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        var info: [String: Any] = [
            "CFBundleIdentifier": "com.example.\(name.lowercased())", "CFBundleExecutable": "lib\(name).so",
            "ApplicationDelegateClassName": "\(name).AppDelegate",
        ]
        if !groups.isEmpty { info["AppHostEntitlements"] = ["com.apple.security.application-groups": groups] }
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: url.appendingPathComponent("Info.plist"))
        try Data().write(to: url.appendingPathComponent("lib\(name).so"))
        return try AppBundle(url: url)
    }

    private func service(users: Bool = false, perAppUsers: Bool = true) throws -> (StorageService, URL) {
        let state = try files.url("state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        var policy = Policy()
        policy.perAppUsers = perAppUsers
        let volumes = StorageVolumes(mechanism: .accounting, stateDirectory: state, device: nil)
        let table = users ? AppUsers(stateDirectory: state, range: policy.appUserRange) : nil
        return (StorageService(volumes: volumes, users: table, policy: policy), state)
    }

    @Test func aPurgeWaitsForTheAppsProcessAndHappensOnce() throws {
        let (storage, _) = try service()
        let app = AppID(index: 3)
        #expect(!storage.takePendingPurge(app))
        let effects = storage.storagePressure([.init(id: app, state: .suspended, isEnding: false, inForeground: false)])
        #expect(effects.last == .end(app, StoragePressure.termination))
        #expect(storage.takePendingPurge(app))
        #expect(!storage.takePendingPurge(app))
    }

    /// Storage pressure's effects, app by app and in order: purge what is not running, end a
    /// suspended app (said first) and purge it once gone, wait for one being ended, leave a
    /// running one and say why.
    @Test func storagePressurePurgesEndsWaitsOrLeavesEachApp() throws {
        let (storage, _) = try service()
        let ids = (0..<5).map { AppID(index: $0) }
        let effects = storage.storagePressure([
            .init(id: ids[0], state: .notRunning, isEnding: false, inForeground: false),
            .init(id: ids[1], state: .suspended, isEnding: false, inForeground: false),
            .init(id: ids[2], state: .background, isEnding: true, inForeground: false),
            .init(id: ids[3], state: .launching, isEnding: false, inForeground: true),
            .init(id: ids[4], state: .background, isEnding: false, inForeground: false),
        ])
        #expect(effects == [
            .purge(ids[0]),
            .say(ids[1], "suspended: ending it (\(TerminationCode.cachesReclaimed)) to reclaim its caches; they are purged once it is gone"),
            .end(ids[1], StoragePressure.termination),
            .say(ids[2], "being ended: its caches are purged once it is gone"),
            .say(ids[3], "left alone: launching in the foreground"),
            .say(ids[4], "left alone: running in the background"),
        ])
        #expect(ids.map(storage.takePendingPurge) == [false, true, true, false, false])
    }

    @Test func aPurgeEmptiesCachesAndTmpAndKeepsDocuments() throws {
        let (storage, _) = try service()
        let notes = try bundle("Notes")
        #expect(storage.purge(notes).outcome == "nothing to purge: it has no container yet")
        let container = URL(fileURLWithPath: storage.containerPath(.app(notes.identifier)))
        for (relative, size) in [("Library/Caches/a", 1000), ("Library/Caches/deep/b", 24), ("tmp/c", 100), ("Documents/kept", 7)] {
            let file = container.appendingPathComponent(relative)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(count: size).write(to: file)
        }
        // What the purged entries occupy on the disk (the directory `deep` too), as the purge counts.
        let occupied = ["Library/Caches/a", "Library/Caches/deep/b", "Library/Caches/deep", "tmp/c"].reduce(UInt64(0)) { total, relative in
            var info = stat()
            return stat(container.appendingPathComponent(relative).path, &info) == 0 ? total + UInt64(info.st_blocks) * 512 : total
        }
        let (warnings, outcome) = storage.purge(notes)
        #expect(warnings.isEmpty)
        #expect(occupied >= 1124 && outcome == StoragePressure.purged(bytes: occupied, files: 3, problem: nil))
        #expect(FileManager.default.fileExists(atPath: container.appendingPathComponent("Documents/kept").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.appendingPathComponent("Library/Caches").path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.appendingPathComponent("tmp").path).isEmpty)
    }

    @Test func aPurgeNeverFollowsALinkOutOfTheContainer() throws {
        let (storage, state) = try service()
        let notes = try bundle("Notes")
        let outside = state.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data(count: 10).write(to: outside.appendingPathComponent("precious"))
        let container = URL(fileURLWithPath: storage.containerPath(.app(notes.identifier)))
        try FileManager.default.createDirectory(at: container.appendingPathComponent("Library"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: container.appendingPathComponent("Library/Caches"), withDestinationURL: outside)
        let outcome = storage.purge(notes).outcome
        #expect(outcome == StoragePressure.purged(bytes: 0, files: 0, problem: "Library/Caches is not a directory (a link?): left as it is"))
        #expect(FileManager.default.fileExists(atPath: outside.appendingPathComponent("precious").path))
    }

    @Test func eachAppHasAUserOfItsOwnUnlessTheyShareOne() throws {
        let notes = try bundle("Notes", groups: ["group.example"])
        let weather = try bundle("Weather", groups: ["group.example"])
        let (none, _) = try service(users: false)
        #expect(try none.owner(of: notes) == nil)
        #expect(!none.hasAppUsers)

        let (own, _) = try service(users: true)
        let first = try #require(try own.owner(of: notes))
        let second = try #require(try own.owner(of: weather))
        #expect(first.uid != second.uid)
        #expect(try own.owner(of: notes)?.uid == first.uid)
        // One app group, one gid, whichever app asks.
        #expect(first.groups.count == 1 && first.groups == second.groups)

        let (shared, _) = try service(users: true, perAppUsers: false)
        #expect(try shared.owner(of: notes)?.uid == shared.owner(of: weather)?.uid)
        #expect(try shared.owner(of: notes)?.groups == [])
    }
}
