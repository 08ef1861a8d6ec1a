// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import CAppHostShims
import Foundation
import Testing

/// Storage limits and storage pressure (issue 12, item 9: "No storage limit" — an app
/// fallocated 4 GiB in Documents), against real app processes that write real data: the Probe's
/// `storage` behaviour (StorageProbes.swift).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct StorageTests {
    /// Whether a host can give each container a file system of its own here: root, loop devices
    /// and mkfs.ext4 (what `apphost doctor` reports as "disk images"; checked here without it).
    static let hasDiskImages = getuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0
        && (["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"] as [String]).contains { path in access(path, X_OK) == 0 }

    static let mebibyte: UInt64 = 1 << 20

    /// The latest `ps` line of `name`, asked for now.
    private func ps(_ host: HostSession, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Event {
        let seen = host.allEvents.filter { $0.event == "ps" && $0.name == name }.count
        host.send("ps")
        return try host.waitFor("ps of \(name)", occurrence: seen + 1, sourceLocation: sourceLocation) { $0.event == "ps" && $0.name == name }
    }

    private func number(_ event: Event, _ key: String) -> UInt64? { (event.fields[key] as? NSNumber)?.uint64Value }

    /// Whether `path` is a mount point (a file system other than its parent directory's).
    private func isMountPoint(_ path: String) -> Bool {
        var info = stat(), parent = stat()
        return lstat(path, &info) == 0 && stat((path as NSString).deletingLastPathComponent, &parent) == 0 && info.st_dev != parent.st_dev
    }

    /// Mounts under the scratch directory (none once a host has shut down).
    private func mounts(under scratch: Scratch) -> [String] {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && fields[4].hasPrefix(scratch.url.path + "/") ? String(fields[4]) : nil
        }
    }

    /// "storage write: ENOSPC after 54 MiB" → ("ENOSPC", 54).
    private func outcome(_ line: String?) -> (String, Int)? {
        guard let words = line?.split(separator: " "), words.count >= 3, let count = Int(words[words.count - 2]) else { return nil }
        return (String(words[words.count - 4]), count)
    }

    private func container(_ scratch: Scratch, _ name: String) -> URL {
        scratch.stateDirectory.appendingPathComponent("containers/test.\(name.lowercased())")
    }

    // MARK: The limit

    /// The bug: an app fallocated 4 GiB in Documents; nothing stopped it.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func anAppWritingPastItsLimitGetsENOSPCAndIsNotEnded() throws {
        let scratch = try Scratch()
        let group = "group.test.filler"
        let filler = try scratch.bundle(
            "Filler", behavior: ["storage": ["fallocateMiB": 4096, "writeMiB": 200, "groupWriteMiB": 100], "group": group],
            changes: ["AppHostEntitlements": ["com.apple.security.application-groups": [group]]])
        let host = try HostSession([filler], scratch: scratch, arguments: ["--storage-limit", "64", "--app-group-storage-limit", "32"])
        let made = try host.waitFor("the container's file system") { $0.event == "storage" && $0.detail?.contains("mounted its 64.0 MiB file system") == true }
        #expect(made.name == "Filler")
        let active = try host.waitFor("Filler", "didBecomeActive")
        let lines = scratch.recorded("Filler")
        #expect(lines.contains("storage fallocate 4096 MiB: ENOSPC"), "\(lines)")
        // What fits: the limit less the file system's own bookkeeping (journal, inode tables).
        let write = try #require(outcome(lines.first { $0.hasPrefix("storage write: ") }), "\(lines)")
        #expect(write.0 == "ENOSPC" && (40..<64).contains(write.1), "\(write)")
        let groupWrite = try #require(outcome(lines.first { $0.hasPrefix("storage group write: ") }), "\(lines)")
        #expect(groupWrite.0 == "ENOSPC" && (16..<32).contains(groupWrite.1), "\(groupWrite)")

        // Not ended for it: it runs on, and ps shows its usage against its limits.
        let listed = try ps(host, "Filler")
        #expect(listed.state == "active" && listed.pid == active.pid)
        #expect(number(listed, "storageLimitBytes") == 96 * Self.mebibyte)
        #expect(listed.fields["storageMechanism"] as? String == "disk-image")
        let used = try #require(number(listed, "storageBytes"))
        #expect(used > UInt64(write.1 + groupWrite.1 - 2) * Self.mebibyte && used <= 96 * Self.mebibyte, "\(used)")
        let parts = try #require(listed.fields["storage"] as? [[String: Any]])
        #expect(parts.map { $0["kind"] as? String } == ["container", "group"])
        #expect(parts.map { $0["identifier"] as? String } == ["test.filler", group])
        #expect(parts.map { ($0["limitBytes"] as? NSNumber)?.uint64Value } == [64 * Self.mebibyte, 32 * Self.mebibyte])

        // The host's disk holds no more than the limits: the images are sparse and that large.
        for (image, limit) in [("containers/test.filler", 64), ("groups/\(group)", 32)] {
            var info = stat()
            #expect(stat(scratch.stateDirectory.appendingPathComponent("storage/\(image).ext4").path, &info) == 0)
            #expect(info.st_size == Int(limit) << 20 && UInt64(info.st_blocks) * 512 <= UInt64(limit) << 20)
        }
        host.send("home")
        try host.waitFor("Filler", "suspended")
        #expect(!host.allEvents.contains { $0.event == "terminated" })
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        #expect(mounts(under: scratch).isEmpty, "unmounted at shutdown")
    }

    /// Under accounting only (the degraded mode, forced here), usage is measured and nothing is
    /// limited: ps says so.
    @Test func accountingOnlyMeasuresAndLimitsNothing() throws {
        let scratch = try Scratch()
        let writer = try scratch.bundle("Writer", behavior: ["storage": ["writeMiB": 24]])
        let host = try HostSession([writer], scratch: scratch, arguments: ["--storage", "accounting", "--storage-limit", "16"])
        try host.waitFor("Writer", "didBecomeActive")
        try scratch.waitForRecorded("Writer", "storage write: ok after 24 MiB")
        let listed = try ps(host, "Writer")
        #expect(listed.fields["storageMechanism"] as? String == "accounting")
        #expect(listed.fields["storageLimitBytes"] == nil)
        #expect(try #require(number(listed, "storageBytes")) >= 24 * Self.mebibyte)
        #expect(!isMountPoint(container(scratch, "Writer").path))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    // MARK: Storage pressure

    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func storagePressurePurgesTheCachesOfAppsNotRunningAndLeavesRunningOnesAlone() throws {
        let scratch = try Scratch()
        let cached = try scratch.bundle("Cached", behavior: ["storage": ["cacheMiB": 3, "documentMiB": 1]])
        let back = try scratch.bundle("Back", behavior: ["storage": ["cacheMiB": 1], "beginTaskIn": "didEnterBackground"])
        let front = try scratch.bundle("Front", behavior: ["storage": ["cacheMiB": 1]])
        let host = try HostSession([cached, back, front], scratch: scratch, arguments: ["--storage-limit", "64"])
        try host.waitFor("Cached", "didBecomeActive")
        #expect(scratch.recorded("Cached").contains("storage cache: ok, ok"))
        host.send("terminate Cached")
        try host.waitFor("Cached", "terminated")
        host.send("open Back")
        try host.waitFor("Back", "didBecomeActive")
        host.send("open Front")
        try host.waitFor("Back", "backgroundTaskBegan")
        try host.waitFor("Front", "didBecomeActive")

        host.send("storage-pressure")
        let purged = try host.waitFor("Cached", "storagePressure")
        #expect(purged.detail == "purged Library/Caches and tmp: freed 6291456 bytes (6.0 MiB) in 2 files")
        #expect(try host.waitFor("Back", "storagePressure").detail == "left alone: running in the background")
        #expect(try host.waitFor("Front", "storagePressure").detail == "left alone: running in the foreground")

        let files = FileManager.default
        let cachedContainer = container(scratch, "Cached")
        #expect(try files.contentsOfDirectory(atPath: cachedContainer.appendingPathComponent("Library/Caches").path).isEmpty)
        #expect(try files.contentsOfDirectory(atPath: cachedContainer.appendingPathComponent("tmp").path).isEmpty)
        #expect(try files.attributesOfItem(atPath: cachedContainer.appendingPathComponent("Documents/keep.bin").path)[.size] as? Int == 1 << 20)
        for name in ["Back", "Front"] {
            #expect(files.fileExists(atPath: container(scratch, name).appendingPathComponent("Library/Caches/cache.bin").path), "\(name)'s caches are kept")
            #expect(files.fileExists(atPath: container(scratch, name).appendingPathComponent("tmp/scratch.bin").path))
        }
        #expect(try ps(host, "Back").state == "background")
        #expect(try ps(host, "Front").state == "active")
        #expect(host.allEvents.filter { $0.event == "terminated" }.map(\.name) == ["Cached"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func aSuspendedAppIsEndedWithBadDiscThenPurged() throws {
        let scratch = try Scratch()
        let sleeper = try scratch.bundle("Sleeper", behavior: ["storage": ["cacheMiB": 2]])
        let host = try HostSession([sleeper], scratch: scratch, arguments: ["--storage-limit", "64"])
        try host.waitFor("Sleeper", "didBecomeActive")
        host.send("home")
        let suspended = try host.waitFor("Sleeper", "suspended")
        let pid = try #require(suspended.pid)

        host.send("storage-pressure")
        let notice = try host.waitFor("Sleeper", "storagePressure")
        #expect(notice.detail == "suspended: ending it (0xbaddd15c) to reclaim its caches; they are purged once it is gone")
        let end = try host.waitFor("Sleeper", "terminated")
        #expect(end.namespace == "RUNNINGBOARD" && end.code == "0xbaddd15c" && end.kind == "storage-pressure")
        let reason = "ended while suspended to reclaim its caches under storage pressure: Library/Caches and tmp are purged once it is gone"
        #expect(end.reason == reason)
        let report = try Report(end)
        #expect(report["kind"] as? String == "storage-pressure" && report["code"] as? String == "0xbaddd15c" && report["reason"] as? String == reason)
        #expect(report["state"] as? String == "suspended")
        let usage = try #require(report["usage"] as? [String: Any])
        #expect((usage["storageLimitBytes"] as? NSNumber)?.uint64Value == 64 * Self.mebibyte)
        #expect(((usage["storageBytes"] as? NSNumber)?.uint64Value ?? 0) >= 4 * Self.mebibyte, "its caches, before the purge")
        // Purged once its process is gone, and after the termination is reported.
        let purged = try host.waitFor("Sleeper", "storagePressure", occurrence: 2)
        #expect(purged.detail == "purged Library/Caches and tmp: freed 4194304 bytes (4.0 MiB) in 2 files")
        #expect(waitUntilGone(pid, timeout: 5))
        #expect(scratch.callbacks("Sleeper").last == "didEnterBackground background", "no callback: it was suspended")
        #expect(try FileManager.default.contentsOfDirectory(atPath: container(scratch, "Sleeper").appendingPathComponent("Library/Caches").path).isEmpty)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.backgroundRules)
    }

    // MARK: Existing containers

    /// A container made before storage was limited moves into its file system whole; a link
    /// the app planted in its caches, pointing outside, is moved as a link and removed by the
    /// purge, never followed.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func anExistingContainerMovesIntoItsFileSystemAndAPlantedLinkIsNotFollowed() throws {
        let scratch = try Scratch()
        let files = FileManager.default
        let home = container(scratch, "Veteran")
        let outside = scratch.url.appendingPathComponent("outside")
        try files.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("must survive".utf8).write(to: outside.appendingPathComponent("victim.txt"))
        for directory in ["Documents", "Library/Caches", "Library/Preferences", "tmp"] {
            try files.createDirectory(at: home.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let note = "written before storage was limited"
        try Data(note.utf8).write(to: home.appendingPathComponent("Documents/note.txt"))
        try Data(repeating: 7, count: 2 << 20).write(to: home.appendingPathComponent("Library/Caches/old.cache"))
        try Data(repeating: 8, count: 1 << 20).write(to: home.appendingPathComponent("tmp/old.tmp"))
        try files.createSymbolicLink(atPath: home.appendingPathComponent("Library/Caches/escape").path, withDestinationPath: outside.path)
        try files.createSymbolicLink(
            atPath: home.appendingPathComponent("Library/Caches/victim").path, withDestinationPath: outside.appendingPathComponent("victim.txt").path)

        let host = try HostSession([try scratch.bundle("Veteran")], scratch: scratch, arguments: ["--storage-limit", "64"])
        let moved = try host.waitFor("the move") { $0.event == "warning" && $0.name == "Veteran" }
        #expect(moved.detail == "the container of test.veteran: what it held before its storage was limited was moved into its file system")
        try host.waitFor("Veteran", "didBecomeActive")
        #expect(isMountPoint(home.path))
        #expect(try String(contentsOf: home.appendingPathComponent("Documents/note.txt"), encoding: .utf8) == note)
        #expect(try files.destinationOfSymbolicLink(atPath: home.appendingPathComponent("Library/Caches/escape").path) == outside.path)

        host.send("terminate Veteran")
        try host.waitFor("Veteran", "terminated")
        host.send("storage-pressure")
        let purged = try host.waitFor("Veteran", "storagePressure")
        // The two files' blocks; the links take none (their targets live in their inodes).
        #expect(purged.detail == "purged Library/Caches and tmp: freed 3145728 bytes (3.0 MiB) in 4 files")
        #expect(try String(contentsOf: outside.appendingPathComponent("victim.txt"), encoding: .utf8) == "must survive")
        #expect(try files.contentsOfDirectory(atPath: outside.path) == ["victim.txt"])
        #expect(try files.contentsOfDirectory(atPath: home.appendingPathComponent("Library/Caches").path).isEmpty)
        #expect(files.fileExists(atPath: home.appendingPathComponent("Documents/note.txt").path))
        host.closeInput()
        #expect(try host.waitForExit() == 0)

        // Unmounted, the directory holds nothing: the note lives in the image.
        #expect(!isMountPoint(home.path))
        #expect(!files.fileExists(atPath: home.appendingPathComponent("Documents/note.txt").path))
        #expect(scratch.containerFile("test.veteran", "Documents/note.txt").map { String(decoding: $0, as: UTF8.self) } == note)
    }

    /// Raising the limit grows the file system; lowering it shrinks it when what it holds fits
    /// (in place, or where resize2fs will not go that low, by copying into a new image), and is
    /// refused in one line when not (the container keeps its limit and its files).
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func aLimitCanBeRaisedAndLoweredForAnExistingContainer() throws {
        let scratch = try Scratch()
        /// Runs a host at `limit` until the notice `expecting` came and the app is active; its ps line.
        func session(limit: Int, behavior: [String: Any] = [:], expecting: (Event) -> Bool) throws -> Event {
            let host = try HostSession([try scratch.bundle("Keeper", behavior: behavior)], scratch: scratch, arguments: ["--storage-limit", "\(limit)"])
            // e2fsck and resize2fs, or a copy into a new image, may take seconds on a loaded machine.
            let notice = try host.waitFor("a storage notice at \(limit) MiB", timeout: 30) { $0.name == "Keeper" && expecting($0) }
            try host.waitFor("Keeper", "didBecomeActive")
            let listed = try ps(host, "Keeper")
            host.closeInput()
            #expect(try host.waitForExit() == 0)
            #expect(mounts(under: scratch).isEmpty)
            #expect(notice.name == "Keeper")
            return listed
        }
        let first = try session(limit: 64, behavior: ["storage": ["documentMiB": 20]]) {
            $0.event == "storage" && $0.detail == "the container of test.keeper: made its 64.0 MiB file system"
        }
        #expect(number(first, "storageLimitBytes") == 64 * Self.mebibyte)
        let raised = try session(limit: 2048) {
            $0.event == "storage" && $0.detail == "the container of test.keeper: its file system grew from 64.0 MiB to 2048.0 MiB"
        }
        #expect(number(raised, "storageLimitBytes") == 2048 * Self.mebibyte)
        let refused = try session(limit: 16) {
            $0.event == "warning" && $0.detail?.hasPrefix("the container of test.keeper keeps its limit of 2048.0 MiB: it holds 20.") == true
                && $0.detail?.contains(" MiB, which does not fit in the new limit of 16.0 MiB (") == true
                && $0.detail?.hasSuffix("); free space in it, or raise the limit") == true
        }
        #expect(number(refused, "storageLimitBytes") == 2048 * Self.mebibyte)
        // resize2fs will not shrink a 2 GiB ext4 below about 74 MiB (its inode tables): copied.
        let lowered = try session(limit: 48) {
            $0.event == "storage" && $0.detail == "the container of test.keeper: its file system shrank from 2048.0 MiB to 48.0 MiB"
        }
        #expect(number(lowered, "storageLimitBytes") == 48 * Self.mebibyte)
        #expect(scratch.containerFile("test.keeper", "Documents/keep.bin")?.count == 20 << 20, "its files survive every change")
    }

    /// A host killed with SIGKILL cannot unmount; the next host on the state directory unmounts
    /// what it left at its start (scripts/chaos found such mounts outliving every later host),
    /// and mounts the container again, whole, when its app launches.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func aFileSystemLeftMountedByAKilledHostIsUnmountedAtTheNextStart() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Survivor", behavior: ["storage": ["documentMiB": 2]])
        let first = try HostSession([bundle], scratch: scratch, arguments: ["--storage-limit", "64"])
        let active = try first.waitFor("Survivor", "didBecomeActive")
        kill(first.process.processIdentifier, SIGKILL)
        _ = try first.waitForExit()
        #expect(waitUntilGone(try #require(active.pid), timeout: 5))
        let home = container(scratch, "Survivor")
        #expect(isMountPoint(home.path), "left mounted")

        // Nothing of a dead host outlives the next one's start: its mounts are undone first.
        let second = try HostSession([try scratch.bundle("Front"), try scratch.bundle("Survivor")], scratch: scratch, arguments: ["--storage-limit", "64"])
        let swept = try second.waitFor("the sweep") { $0.event == "warning" && $0.detail?.hasPrefix("storage: unmounted") == true }
        #expect(swept.detail == "storage: unmounted 1 file system a killed host left mounted")
        try second.waitFor("Front", "didBecomeActive")
        #expect(!isMountPoint(home.path), "not mounted until Survivor launches")
        second.send("open Survivor")
        let mounted = try second.waitFor("the mount") { $0.event == "storage" && $0.name == "Survivor" }
        #expect(mounted.detail?.hasPrefix("the container of test.survivor: mounted its 64.0 MiB file system (/dev/loop") == true, "\(mounted)")
        try second.waitFor("Survivor", "didBecomeActive")
        #expect(try FileManager.default.attributesOfItem(atPath: home.appendingPathComponent("Documents/keep.bin").path)[.size] as? Int == 2 << 20)
        second.closeInput()
        #expect(try second.waitForExit() == 0)
        #expect(!isMountPoint(home.path))
    }

    /// Runs `command` (an absolute path) with `arguments`; returns its exit status.
    private func run(_ command: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Another host's container image (an ext4 file in its `storage/containers/`, mounted from a
    /// loop device outside this host's state directory) is detached from each app's mount
    /// namespace by its init: the app's mount table has no such mount, while the machine's has.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func anotherHostsContainerImageIsNotInAnAppsMountNamespace() throws {
        let scratch = try Scratch()
        let images = scratch.url.appendingPathComponent("other-host/storage/containers")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        let image = images.appendingPathComponent("test.other.img")
        #expect(FileManager.default.createFile(atPath: image.path, contents: nil))
        #expect(truncate(image.path, 16 * off_t(Self.mebibyte)) == 0)
        let mkfs = access("/usr/sbin/mkfs.ext4", X_OK) == 0 ? "/usr/sbin/mkfs.ext4" : "/sbin/mkfs.ext4"
        #expect(try run(mkfs, ["-q", "-F", image.path]) == 0)
        let point = scratch.url.appendingPathComponent("other-host-container")
        try FileManager.default.createDirectory(at: point, withIntermediateDirectories: true)
        #expect(try run("/bin/mount", ["-o", "loop", image.path, point.path]) == 0)
        defer { _ = umount2(point.path, Int32(MNT_DETACH)) }
        #expect(isMountPoint(point.path))

        let host = try HostSession([try scratch.bundle("First")], scratch: scratch)
        let pid = try #require(try host.waitFor("First", "didBecomeActive").pid)
        let table = FileHandle(forReadingAtPath: "/proc/\(pid)/mountinfo")?.readDataToEndOfFile() ?? Data()
        let points = String(decoding: table, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.split(separator: " ").dropFirst(4).first.map(String.init)
        }
        #expect(points.contains("/proc"), "the app's mount table was read: \(points)")
        #expect(!points.contains(point.path), "another host's container image is in the app's mount namespace")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// A host whose first app cannot launch exits at once, without shutting down: it still
    /// unmounts what the launch mounted.
    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func aHostWhoseFirstAppCannotLaunchLeavesNothingMounted() throws {
        let scratch = try Scratch()
        let refuser = try scratch.bundle("Refuser", behavior: ["willFinishLaunchingReturns": false])
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--storage-limit", "64", refuser.path])
        #expect(result.status == 1)
        #expect(result.error.contains("Refuser.app cannot launch: "), "\(result.error)")
        #expect(FileManager.default.fileExists(atPath: scratch.stateDirectory.appendingPathComponent("storage/containers/test.refuser.ext4").path))
        #expect(mounts(under: scratch).isEmpty)
    }

    @Test(.enabled(if: hasDiskImages, "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs)"))
    func doctorSaysWhichStorageMechanismIsInUse() throws {
        let scratch = try Scratch()
        let result = try runApphost(["doctor", "--state-dir", scratch.stateDirectory.path])
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("no   project quotas: ") || $0.hasPrefix("yes  project quotas: ") })
        #expect(lines.contains("yes  disk images: loop devices (/dev/loop-control) and mkfs.ext4 (/usr/sbin/mkfs.ext4)"))
        let summary = try #require(lines.first { $0.hasPrefix("storage: ") })
        #expect(summary.hasPrefix("storage: disk-image, a size-limited file system per container: an ext4 image on a loop device")
            || summary.hasPrefix("storage: project-quota, a project quota per container"), "\(summary)")
    }
}
