import AppHostKit
import CSQLite
import Foundation
import ProbeSyscalls
import Synchronization

// What the Probe holds and uses for the resource rules: ProbeBehavior `hold` takes a lock, a
// SQLite transaction, a file or a Unix socket connection in didFinishLaunching, and `releaseIn`
// lets go of it in a callback (or "task": under a background task begun in
// applicationDidEnterBackground, which ends once the resource is released). `allocateMiB`,
// `growMiB` and `hogMiB` use memory; `freeOnMemoryWarning` gives it back.

/// A resource the Probe holds: `hold` is one of
///   {"lock": "flock" | "posix" | "ofd", "type": "read" | "write", "group": ID, "file": NAME, "onThread": true,
///    "padding": N}                    (N descriptors on a file in the container opened first: the
///                                     lock's is then among the last of a large table)
///   {"sqlite": NAME, "group": ID}     a database inside a write transaction
///   {"open": PATH}                    a file or device kept open
///   {"connect": PATH}                 a connection to a Unix socket
///   {"files": N}                      N descriptors on a file in the container, and a lock on a
///                                     file outside any app group (the lock check's worst case)
final class HeldResources: @unchecked Sendable {
    private var descriptors: [Int32] = []
    private var lockKind: Int32 = 0
    private var database: OpaquePointer?
    private let record: (String) -> Void

    init(record: @escaping (String) -> Void) { self.record = record }

    func take(_ hold: [String: Any]) {
        let groupDirectory = (hold["group"] as? String).flatMap {
            FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: $0)
        }
        if let kind = hold["lock"] as? String, let directory = groupDirectory {
            if let padding = hold["padding"] as? Int {
                let path = Application.shared.containerURL.appendingPathComponent("Documents/padding").path
                for _ in 0..<padding { descriptors.append(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)) }
            }
            let path = directory.appendingPathComponent(hold["file"] as? String ?? "shared.lock").path
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o660)
            lockKind = ["flock": 0, "posix": 1, "ofd": 2][kind] ?? 0
            let exclusive: Int32 = hold["type"] as? String == "read" ? 0 : 1
            let result = Atomic<Int32>(0)
            if hold["onThread"] as? Bool == true {
                // Taken by another thread: the check must find it through the process's descriptors.
                let thread = Thread { [lockKind] in result.store(probe_lock(fd, lockKind, exclusive), ordering: .sequentiallyConsistent) }
                thread.start()
                while !thread.isFinished { usleep(1000) }
            } else {
                result.store(probe_lock(fd, lockKind, exclusive), ordering: .sequentiallyConsistent)
            }
            let outcome = result.load(ordering: .sequentiallyConsistent)
            descriptors.append(fd)
            record("holding \(kind) lock on \(path): \(outcome == 0 ? "ok" : "error \(-outcome)")")
        } else if let name = hold["sqlite"] as? String, let directory = groupDirectory {
            let path = directory.appendingPathComponent(name).path
            var handle: OpaquePointer?
            var status = sqlite3_open(path, &handle)
            database = handle
            for statement in ["CREATE TABLE IF NOT EXISTS forecast(day TEXT, celsius REAL)", "BEGIN IMMEDIATE",
                              "INSERT INTO forecast VALUES('today', 21.5)"] where status == SQLITE_OK {
                status = sqlite3_exec(handle, statement, nil, nil, nil)
            }
            record("holding sqlite transaction on \(path): \(status == SQLITE_OK ? "ok" : "error \(status)")")
        } else if let path = hold["open"] as? String {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            descriptors.append(fd)
            record("holding open \(path): \(fd >= 0 ? "ok" : "error \(errno)")")
        } else if let path = hold["connect"] as? String {
            let fd = probe_connect_unix(path)
            if fd >= 0 { descriptors.append(fd) }
            record("holding connection to \(path): \(fd >= 0 ? "ok" : "error \(-fd)")")
        } else if let count = hold["files"] as? Int {
            let documents = Application.shared.containerURL.appendingPathComponent("Documents")
            let path = documents.appendingPathComponent("many").path
            for _ in 0..<count { descriptors.append(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)) }
            let locked = open(documents.appendingPathComponent("private.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            lockKind = 1
            _ = probe_lock(locked, lockKind, 1)
            descriptors.append(locked)
            record("holding \(count) files and a private lock")
        }
    }

    /// Commits and closes the database, unlocks and closes every descriptor.
    func release() {
        if let database {
            let status = sqlite3_exec(database, "COMMIT", nil, nil, nil)
            sqlite3_close(database)
            self.database = nil
            record("released sqlite: \(status == SQLITE_OK ? "committed" : "error \(status)")")
        }
        for fd in descriptors where fd >= 0 {
            _ = probe_unlock(fd, lockKind)
            close(fd)
        }
        if !descriptors.isEmpty { record("released \(descriptors.count) descriptors") }
        descriptors = []
    }
}

/// Memory the Probe uses on purpose, every page touched so that it is resident.
final class MemoryUse: @unchecked Sendable {
    private var blocks: [UnsafeMutableRawPointer] = []
    private let lock = NSLock()

    var mebibytes: Int { lock.withLock { blocks.count } }

    func allocate(mebibytes: Int) {
        for _ in 0..<mebibytes {
            guard let block = malloc(1 << 20) else { return }
            memset(block, 0xA5, 1 << 20)
            lock.withLock { blocks.append(block) }
        }
    }

    /// Adds `step` MiB every `every` seconds until `upTo` MiB (forever if nil), on a thread.
    func grow(step: Int, every: Double, upTo: Int?) {
        Thread.detachNewThread { [self] in
            while upTo.map({ mebibytes < $0 }) ?? true {
                allocate(mebibytes: step)
                Thread.sleep(forTimeInterval: every)
            }
        }
    }

    func free() {
        let freed = lock.withLock { () -> [UnsafeMutableRawPointer] in
            defer { blocks = [] }
            return blocks
        }
        freed.forEach { Foundation.free($0) }
    }
}
