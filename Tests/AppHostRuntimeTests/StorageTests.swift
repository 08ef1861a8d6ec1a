#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import AppHostSystem
@testable import AppHostRuntime

/// What storage pressure does to each app, decided from its state alone.
@Suite struct StoragePressureTests {
    @Test func appsNotRunningArePurgedSuspendedOnesEndedRunningOnesLeft() {
        let expected: [(AppState, Bool, StoragePressure.Decision)] = [
            (.notRunning, false, .purge),
            (.terminated, false, .purge),
            (.suspended, false, .end(StoragePressure.termination)),
            (.launching, true, .leave("launching in the foreground")),
            (.launching, false, .leave("launching in the background")),
            (.inactive, true, .leave("running in the foreground")),
            (.active, true, .leave("running in the foreground")),
            (.background, false, .leave("running in the background")),
        ]
        for (state, inForeground, decision) in expected {
            #expect(StoragePressure.decision(state: state, isEnding: false, inForeground: inForeground) == decision, "\(state)")
        }
    }

    @Test func anAppAlreadyBeingEndedIsPurgedOnceGoneWhateverItsState() {
        for state in AppState.allCases {
            #expect(StoragePressure.decision(state: state, isEnding: true, inForeground: false) == .purgeWhenGone)
        }
    }

    @Test func theEndIsBadDiscWithAReasonThatSaysWhy() {
        let termination = StoragePressure.termination
        #expect(termination.kind == .storagePressure && termination.kind.rawValue == "storage-pressure")
        #expect(termination.namespace == .runningBoard)
        #expect(termination.formattedCode == "0xbaddd15c")
        #expect(termination.reason == "ended while suspended to reclaim its caches under storage pressure: Library/Caches and tmp are purged once it is gone")
        #expect(!termination.isCrash)
    }

    @Test func aPurgeSaysWhatItFreedInBytes() {
        #expect(StoragePressure.purged(bytes: 3 << 20, files: 2, problem: nil) == "purged Library/Caches and tmp: freed 3145728 bytes (3.0 MiB) in 2 files")
        #expect(StoragePressure.purged(bytes: 0, files: 1, problem: "tmp is not a directory (a link?): left as it is")
            == "purged Library/Caches and tmp: freed 0 bytes (0.0 MiB) in 1 file; tmp is not a directory (a link?): left as it is")
        // Empty: the directories' own blocks are not what the app kept.
        #expect(StoragePressure.purged(bytes: 4096, files: 0, problem: nil) == "purged Library/Caches and tmp: nothing to free (they held no file)")
    }
}

/// The usage figures `ps` and reports show.
@Suite struct StorageUsageTests {
    @Test func anAppsUsageAddsItsContainerAndItsGroups() {
        let usage = StorageUsage(mechanism: .diskImage, parts: [
            StoragePart(kind: "container", identifier: "com.example.a", bytes: 10, limitBytes: 100),
            StoragePart(kind: "group", identifier: "group.example", bytes: 5, limitBytes: 50),
        ])
        #expect(usage.bytes == 15 && usage.limitBytes == 150)
        var unlimited = usage
        unlimited.parts[1].limitBytes = nil
        #expect(unlimited.limitBytes == nil, "a part nothing limits leaves the whole unlimited")
    }

    @Test func mountinfoEscapesAreRead() {
        #expect(MountTable.unescape(#"/var/lib/my\040state"#[...]) == "/var/lib/my state")
        #expect(MountTable.unescape(#"/a\134b"#[...]) == #"/a\b"#)
        #expect(MountTable.unescape("/plain"[...]) == "/plain")
    }

    @Test func theLimitHasAFloor() throws {
        var policy = Policy()
        #expect(policy.storageLimit == 2048 << 20 && policy.appGroupStorageLimit == 1024 << 20)
        policy.storageLimit = 8 << 20
        let error = #expect(throws: PolicyError.self) { try policy.validate() }
        #expect(error?.description == "storageLimit (8.0 MiB) must be at least 16.0 MiB: a container's file system needs room for its own bookkeeping")
        let set = try Policy().applying(commandLine: [("storageLimit", ["64"]), ("appGroupStorageLimit", ["32"])])
        #expect(set.storageLimit == 64 << 20 && set.appGroupStorageLimit == 32 << 20)
    }
}

/// Project ids under project quotas: kept per container, never one another host's files carry.
@Suite struct ProjectTableTests {
    @Test func idsAreAllocatedOnceSkippingIdsInUseAndKept() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("projects-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        var table = ProjectTable(file: file)
        let first = ProjectTable.range.lowerBound
        let app = try table.project(for: .app("com.example.a")) { $0 == first }
        #expect(app == first + 1, "the first id carries another host's files")
        let group = try table.project(for: .group("group.example")) { _ in false }
        #expect(group == first, "free again for this table")
        #expect(try table.project(for: .app("com.example.a")) { _ in true } == app, "kept")
        let reread = ProjectTable(file: file)
        #expect(reread.containers == ["com.example.a": app] && reread.groups == ["group.example": group])
    }
}

/// The walks the root host makes through containers apps own: never following a link.
@Suite(.serialized) struct ContainerTreeTests {
    private let files = FileManager.default

    private func scratch() throws -> URL {
        let url = files.temporaryDirectory.appendingPathComponent("tree-\(UUID().uuidString.prefix(8))")
        try files.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A container's caches with files, a subdirectory, and links to outside planted in them.
    private func plantedCaches(in root: URL, outside: URL) throws -> URL {
        let caches = root.appendingPathComponent("Caches")
        try files.createDirectory(at: caches.appendingPathComponent("nested/deeper"), withIntermediateDirectories: true)
        try files.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: outside.appendingPathComponent("victim"))
        try Data(repeating: 1, count: 8192).write(to: caches.appendingPathComponent("a"))
        try Data(repeating: 2, count: 4096).write(to: caches.appendingPathComponent("nested/deeper/b"))
        try files.createSymbolicLink(atPath: caches.appendingPathComponent("to-dir").path, withDestinationPath: outside.path)
        try files.createSymbolicLink(atPath: caches.appendingPathComponent("nested/to-file").path, withDestinationPath: outside.appendingPathComponent("victim").path)
        return caches
    }

    @Test func removingContentsRemovesLinksNeverTheirTargets() throws {
        let root = try scratch()
        defer { try? files.removeItem(at: root) }
        let outside = root.appendingPathComponent("outside")
        let caches = try plantedCaches(in: root, outside: outside)
        let directory = try DirectoryHandle(path: caches.path)
        var totals = ContainerTree.Totals()
        #expect(ContainerTree.removeContents(of: directory, totals: &totals) == nil)
        #expect(try files.contentsOfDirectory(atPath: caches.path).isEmpty)
        #expect(totals.files == 4, "two files and two links")
        #expect(totals.bytes >= 12288)
        #expect(try String(contentsOf: outside.appendingPathComponent("victim"), encoding: .utf8) == "keep me")
    }

    @Test func aDirectoryReplacedByALinkIsNotEntered() throws {
        let root = try scratch()
        defer { try? files.removeItem(at: root) }
        let outside = root.appendingPathComponent("outside")
        _ = try plantedCaches(in: root, outside: outside)
        let top = try DirectoryHandle(path: root.path)
        let error = #expect(throws: SystemError.self) { _ = try top.open(EntryName("Caches")).open(EntryName("to-dir")) }
        // O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR (ELOOP without O_DIRECTORY).
        #expect(error?.errno == ENOTDIR || error?.errno == ELOOP)
    }

    @Test func mergingCopiesEverythingTheSourceWinningAndLinksStayLinks() throws {
        let root = try scratch()
        defer { try? files.removeItem(at: root) }
        let outside = root.appendingPathComponent("outside")
        let caches = try plantedCaches(in: root, outside: outside)
        let destination = root.appendingPathComponent("into")
        try files.createDirectory(at: destination.appendingPathComponent("a"), withIntermediateDirectories: true)
        try Data("old".utf8).write(to: destination.appendingPathComponent("nested"))
        try Data("theirs".utf8).write(to: destination.appendingPathComponent("only-there"))
        try files.setAttributes([.posixPermissions: 0o640], ofItemAtPath: caches.appendingPathComponent("a").path)
        // A sparse file keeps its hole.
        let sparse = caches.appendingPathComponent("sparse")
        try Data().write(to: sparse)
        let handle = try FileHandle(forWritingTo: sparse)
        try handle.seek(toOffset: 8 << 20)
        try handle.write(contentsOf: Data("end".utf8))
        try handle.close()

        var skipped: [String] = []
        let from = try DirectoryHandle(path: caches.path)
        let into = try DirectoryHandle(path: destination.path)
        try ContainerTree.merge(from: from, into: into, path: destination.path, skipped: &skipped)
        #expect(skipped.isEmpty)
        #expect(try Data(contentsOf: destination.appendingPathComponent("a")) == Data(repeating: 1, count: 8192), "a file replaced the directory")
        #expect(try files.attributesOfItem(atPath: destination.appendingPathComponent("a").path)[.posixPermissions] as? Int == 0o640)
        #expect(try Data(contentsOf: destination.appendingPathComponent("nested/deeper/b")) == Data(repeating: 2, count: 4096), "a directory replaced the file")
        #expect(try files.destinationOfSymbolicLink(atPath: destination.appendingPathComponent("to-dir").path) == outside.path)
        #expect(try files.destinationOfSymbolicLink(atPath: destination.appendingPathComponent("nested/to-file").path) == outside.appendingPathComponent("victim").path)
        #expect(try String(contentsOf: destination.appendingPathComponent("only-there"), encoding: .utf8) == "theirs", "what only the destination has stays")
        #expect(try files.contentsOfDirectory(atPath: outside.path) == ["victim"], "nothing was written through a link")
        var info = stat()
        #expect(stat(destination.appendingPathComponent("sparse").path, &info) == 0)
        #expect(info.st_size == (8 << 20) + 3 && info.st_blocks * 512 < 1 << 20, "the hole was not written")
        #expect(!files.fileExists(atPath: destination.appendingPathComponent(".apphost-moving-\(getpid())").path))
    }

    @Test func measuringCountsEachFileOnceAndFollowsNoLink() throws {
        let root = try scratch()
        defer { try? files.removeItem(at: root) }
        let outside = root.appendingPathComponent("outside")
        let caches = try plantedCaches(in: root, outside: outside)
        try Data(repeating: 3, count: 1 << 20).write(to: outside.appendingPathComponent("big"))
        try files.linkItem(at: caches.appendingPathComponent("a"), to: caches.appendingPathComponent("a-again"))
        let measured = ContainerTree.measure(try DirectoryHandle(path: caches.path))
        // Two files (8 KiB and 4 KiB, the first linked twice) and three directories; not the
        // 1 MiB file behind a link.
        #expect(measured >= 12288 && measured < 1 << 20, "\(measured)")
    }
}

/// A disk image's superblock, read without mounting it.
@Suite struct DiskImageTests {
    @Test(.enabled(if: ExternalTool.find("mkfs.ext4") != nil, "needs mkfs.ext4 (Debian: e2fsprogs)"))
    func aNewImageIsSparseAndItsSuperblockSaysItIsEmpty() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("image-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("a.ext4").path
        try DiskImage.create(at: path, bytes: 64 << 20)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        #expect(DiskImage.size(of: path) == 64 << 20)
        let superblock = try #require(DiskImage.superblock(of: path))
        #expect(superblock.blockSize == 4096 && superblock.blocks == (64 << 20) / 4096)
        #expect(superblock.overheadBlocks > 0)
        #expect(superblock.usedBytes < 1 << 20, "only the root directory and lost+found: \(superblock.usedBytes)")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_blocks * 512 < 8 << 20, "sparse: the journal and tables are not written")
        #expect(DiskImage.superblock(of: "/etc/hostname") == nil)
    }
}
