#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostProtocol

/// How the host stops every thread of an app.
public enum SuspensionMechanism: String, Sendable {
    /// Writes 1 to the app's `cgroup.freeze` and waits for `frozen 1` in `cgroup.events`.
    case cgroupFreezer = "cgroup v2 freezer"
    /// Sends SIGSTOP and waits until every thread in /proc/PID/task is stopped.
    case sigstop = "SIGSTOP"
}

/// The host instance's cgroup v2 directory, under which each app gets its own group. Namespaced
/// by the host's pid, so several hosts can share a machine.
final class CgroupHierarchy {
    let path: String

    private init(path: String) { self.path = path }

    /// The cgroup v2 directory the host runs in, e.g. /sys/fs/cgroup/unified/ here.
    static func hostCgroupDirectory() -> String? { AppHostRuntime.hostCgroupDirectory(controller: nil) }

    /// Creates `apphost-INSTANCE-PID` under the host's own cgroup, or says why it cannot.
    static func create(instance: String) -> Result<CgroupHierarchy, CgroupUnavailable> {
        guard let base = hostCgroupDirectory() else {
            return .failure(CgroupUnavailable(reason: "no cgroup v2 hierarchy is mounted"))
        }
        removeStaleInstances(in: base)
        let path = "\(base)/apphost-\(instance)-\(getpid())"
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            return .failure(CgroupUnavailable(reason: "cannot create \(path): \(String(cString: strerror(errno)))"))
        }
        guard access(path + "/cgroup.freeze", W_OK) == 0 else {
            rmdir(path)
            return .failure(CgroupUnavailable(reason: "\(base) has no writable cgroup.freeze (kernel older than 5.2?)"))
        }
        return .success(CgroupHierarchy(path: path))
    }

    /// Removes the empty groups of hosts that are gone (a host killed by SIGKILL leaves them).
    private static func removeStaleInstances(in base: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for entry in entries where entry.hasPrefix("apphost-") {
            guard let pid = entry.split(separator: "-").last.flatMap({ Int32($0) }), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            let directory = "\(base)/\(entry)"
            for child in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                rmdir("\(directory)/\(child)")
            }
            rmdir(directory)
        }
    }

    func makeGroup(named name: String) throws(SystemCallError) -> AppCgroup {
        let group = AppCgroup(path: "\(path)/\(name)")
        try valueOrErrno("mkdir \(group.path)") { mkdir(group.path, 0o755) }
        return group
    }

    func remove() { rmdir(path) }
}

struct CgroupUnavailable: Error {
    var reason: String
}

/// One app's cgroup: its process and every thread and child it makes.
struct AppCgroup {
    let path: String

    func add(pid: pid_t) throws(SystemCallError) { try write("cgroup.procs", "\(pid)") }
    func freeze() throws(SystemCallError) { try write("cgroup.freeze", "1") }
    func thaw() throws(SystemCallError) { try write("cgroup.freeze", "0") }

    /// Kills every process in the group at once (cgroup.kill, Linux 5.14).
    func killAll() -> Bool { (try? write("cgroup.kill", "1")) != nil }

    /// Whether the kernel reports every task of the group frozen (`frozen 1` in cgroup.events).
    var isFrozen: Bool {
        let fd = open(eventsPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { closeIgnoringErrors(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        return String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n").contains("frozen 1")
    }

    /// Waits up to `limit` for the freeze to complete. Freezing an app takes about 0.1 ms, but the
    /// kernel rate-limits cgroup.events notifications to one per 10 ms, so a short bounded check
    /// confirms the common case at once; inotify covers the rest.
    func awaitFrozen(within limit: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        repeat {
            if isFrozen { return true }
            sched_yield()
        } while clock.now < deadline
        return isFrozen
    }

    var eventsPath: String { path + "/cgroup.events" }

    func remove() { rmdir(path) }

    private func write(_ file: String, _ value: String) throws(SystemCallError) {
        let fd = try valueOrErrno("open \(path)/\(file)") { open(path + "/" + file, O_WRONLY | O_CLOEXEC) }
        defer { closeIgnoringErrors(fd) }
        try valueOrErrno("write \(path)/\(file)") {
            value.withCString { Glibc.write(fd, $0, strlen($0)) }
        }
    }
}

/// Whether every thread of `pid` is stopped (state T or t in /proc/PID/task/TID/stat).
func allThreadsStopped(pid: pid_t) -> Bool {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty else {
        return false
    }
    for task in tasks {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        if state != "T" && state != "t" { return false }
    }
    return true
}

/// Watches cgroup.events files with one inotify descriptor, so a freeze is confirmed the moment
/// the kernel reports it, with no polling.
final class CgroupEventWatcher {
    private let fd: Int32
    private let source: any DispatchSourceRead
    private var handlers: [Int32: () -> Void] = [:]

    init?(queue: DispatchQueue) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [unowned self] in self.drain() }
        source.setCancelHandler { closeIgnoringErrors(fd) }
        source.resume()
    }

    deinit { source.cancel() }

    /// Calls `handler` on the queue each time `path` changes; returns the watch to remove later.
    func watch(_ path: String, handler: @escaping () -> Void) -> Int32? {
        let descriptor = inotify_add_watch(fd, path, UInt32(IN_MODIFY))
        guard descriptor >= 0 else { return nil }
        handlers[descriptor] = handler
        return descriptor
    }

    func unwatch(_ descriptor: Int32) {
        handlers[descriptor] = nil
        inotify_rm_watch(fd, descriptor)
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fired = Set<Int32>()
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                fired.insert(event.wd)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        for descriptor in fired { handlers[descriptor]?() }
    }
}
