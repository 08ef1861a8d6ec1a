#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import AppHostRuntime

/// StorageService's rules without a host: who owns an app's containers, and storage pressure's
/// purges (which wait for an app's process, and never follow a link out of its container).
@Suite struct StorageServiceTests {
    private let files = TemporaryFiles()
    /// Small limits: an image of each is made quickly.
    static let appLimit: UInt64 = 48 << 20, groupLimit: UInt64 = 40 << 20
    /// Whether containers can have disk images here: root, loop devices and mkfs.ext4.
    static let hasDiskImages = getuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0
        && (["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"] as [String]).contains { path in access(path, X_OK) == 0 }

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

    private func service(
        users: Bool = false, perAppUsers: Bool = true, mechanism: StorageMechanism = .accounting
    ) throws -> (StorageService, URL) {
        let state = try files.url("state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        var policy = Policy()
        policy.perAppUsers = perAppUsers
        policy.storageLimit = Self.appLimit
        policy.appGroupStorageLimit = Self.groupLimit
        let volumes = StorageVolumes(mechanism: mechanism, stateDirectory: state, device: nil)
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

    // MARK: Preparing off the loop

    /// What `prepareOffTheLoop` hands back, waited for (its `then` runs on the storage queue).
    private func preparedOffTheLoop(_ storage: StorageService, _ bundle: AppBundle) throws -> StoragePreparation {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<StoragePreparation?>(nil)
        storage.prepareOffTheLoop(bundle) { preparation in
            result.withLock { $0 = preparation }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 120) == .success)
        return try #require(result.withLock { $0 })
    }

    /// Whether `path` is a mount point (a file system other than its parent directory's).
    private func isMountPoint(_ path: String) -> Bool {
        var info = stat(), parent = stat()
        return lstat(path, &info) == 0 && stat((path as NSString).deletingLastPathComponent, &parent) == 0 && info.st_dev != parent.st_dev
    }

    /// The warnings and texts of notices (their durations vary).
    private func texts(_ notices: [StorageVolumes.Notice]) -> [String] { notices.map { ($0.warning ? "warning: " : "") + $0.text } }

    /// Without disk images, nothing holds the loop: `prepare(for:)` does it there.
    @Test func accountingNeedsNothingOffTheLoop() throws {
        let (storage, _) = try service()
        let notes = try bundle("Notes", groups: ["group.example"])
        #expect(!storage.needsPreparingOffTheLoop(notes))
        #expect(storage.prepare(for: notes).isEmpty)
        #expect(!storage.needsPreparingOffTheLoop(notes))
        #expect(storage.mountChanges == 0)
    }

    /// The file systems are made and mounted off the loop, but recorded (volumes, mount count)
    /// and said only when the loop commits them; then the app needs nothing more.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices and mkfs.ext4"))
    func aPreparationOffTheLoopMountsAndIsRecordedWhenCommitted() throws {
        let (storage, _) = try service(mechanism: .diskImage)
        defer { _ = storage.unmountAll() }
        let notes = try bundle("Notes", groups: ["group.example"])
        let app = StorageVolumes.Owner.app(notes.identifier), group = StorageVolumes.Owner.group("group.example")
        #expect(storage.needsPreparingOffTheLoop(notes))
        let preparation = try preparedOffTheLoop(storage, notes)
        #expect(preparation.parts.map(\.owner) == [app, group])
        #expect(preparation.parts.map(\.mountChanged) == [true, true])
        #expect(preparation.parts.map(\.volume.limit) == [Self.appLimit, Self.groupLimit])
        for part in preparation.parts {
            guard case .mounted = part.volume.holding else { Issue.record("\(part.owner) not mounted: \(part.volume)"); continue }
        }
        #expect(isMountPoint(storage.containerPath(app)) && isMountPoint(storage.containerPath(group)))
        // Made, but not recorded until committed.
        #expect(storage.mountChanges == 0 && storage.needsPreparingOffTheLoop(notes))

        let notices = storage.commit(preparation)
        let said = texts(notices)
        #expect(said.count == 4)
        #expect(said.first == "\(app): made its \(Self.appLimit.mebibytes) file system")
        #expect(said[1].hasPrefix("\(app): mounted its \(Self.appLimit.mebibytes) file system (/dev/loop"))
        #expect(said[2] == "\(group): made its \(Self.groupLimit.mebibytes) file system")
        #expect(said.last?.hasPrefix("\(group): mounted its \(Self.groupLimit.mebibytes) file system (/dev/loop") == true)
        #expect(storage.mountChanges == 2)
        #expect(!storage.needsPreparingOffTheLoop(notes))
        #expect(storage.usage(app).limitBytes == Self.appLimit)
        #expect(storage.prepare(for: notes).isEmpty)
        #expect(storage.mountChanges == 2)
    }

    /// Two apps sharing an app group, launched at once: the second's preparation waits behind
    /// the first's and finds the group's file system mounted (no notice, no mount change), though
    /// the first is not yet committed.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices and mkfs.ext4"))
    func aSecondPreparationOfAMountedOwnerFindsItMounted() throws {
        let (storage, _) = try service(mechanism: .diskImage)
        defer { _ = storage.unmountAll() }
        let notes = try bundle("Notes", groups: ["group.example"]), weather = try bundle("Weather", groups: ["group.example"])
        let group = StorageVolumes.Owner.group("group.example")
        let first = try preparedOffTheLoop(storage, notes)
        #expect(storage.needsPreparingOffTheLoop(weather))
        let second = try preparedOffTheLoop(storage, weather)
        #expect(second.parts.map(\.owner) == [.app(weather.identifier), group])
        #expect(second.parts.map(\.mountChanged) == [true, false])
        #expect(second.parts.last?.notices == [])
        #expect(second.parts.last?.volume == first.parts.last?.volume)
        #expect(texts(storage.commit(first)).count == 4)
        #expect(texts(storage.commit(second)).count == 2)
        #expect(storage.mountChanges == 3)
        // The loop's own path finds it mounted too.
        #expect(storage.prepare(for: weather).isEmpty)
    }

    /// Shutdown waits for the preparations queued and unmounts what they mounted (committed or
    /// not); none mounts after it.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices and mkfs.ext4"))
    func unmountingAllWaitsForPreparationsAndNoneMountsAfter() throws {
        let (storage, _) = try service(mechanism: .diskImage)
        let notes = try bundle("Notes"), weather = try bundle("Weather")
        let done = DispatchSemaphore(value: 0)
        storage.prepareOffTheLoop(notes) { _ in done.signal() }
        // Unmounted, or detached where a process another test forks meanwhile still holds a
        // descriptor of its directory: either way, no longer mounted there.
        let lines = storage.unmountAll()
        #expect(lines.allSatisfy { $0.hasPrefix("the container of \(notes.identifier) was still in use at shutdown") })
        // Its preparation was done before the unmount (the queue is serial).
        #expect(done.wait(timeout: .now()) == .success)
        #expect(!isMountPoint(storage.containerPath(.app(notes.identifier))))
        let after = try preparedOffTheLoop(storage, weather)
        #expect(after.parts.map(\.mountChanged) == [false])
        #expect(texts(after.parts.flatMap(\.notices)) == ["warning: the container of \(weather.identifier) is not limited: the host released its storage"])
        #expect(!isMountPoint(storage.containerPath(.app(weather.identifier))))
    }
}
