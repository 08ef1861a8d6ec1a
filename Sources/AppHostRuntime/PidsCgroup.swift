#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Limits the number of processes and threads of each app with the cgroup v1 pids controller
/// (`/sys/fs/cgroup/pids/apphost-INSTANCE-PID/APP-N/pids.max`). Where there is none, the runner
/// sets RLIMIT_NPROC instead, which counts per uid and so needs a per-app user.
final class PidsHierarchy {
    let path: String

    private init(path: String) { self.path = path }

    static let mountPoint = "/sys/fs/cgroup/pids"

    static func create(instance: String) -> PidsHierarchy? {
        guard access(mountPoint + "/cgroup.procs", W_OK) == 0 else { return nil }
        removeStaleInstances()
        let path = "\(mountPoint)/apphost-\(instance)-\(getpid())"
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { return nil }
        return PidsHierarchy(path: path)
    }

    /// Removes the groups of hosts that are gone (a host killed by SIGKILL leaves them).
    private static func removeStaleInstances() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: mountPoint) else { return }
        for entry in entries where entry.hasPrefix("apphost-") {
            guard let pid = entry.split(separator: "-").last.flatMap({ Int32($0) }), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let directory = "\(mountPoint)/\(entry)"
            for child in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                PidsGroup(path: "\(directory)/\(child)").remove()
            }
            rmdir(directory)
        }
    }

    /// A group for one app process, holding at most `limit` tasks (threads and processes).
    func makeGroup(named name: String, limit: Int) -> PidsGroup? {
        let group = PidsGroup(path: "\(path)/\(name)")
        guard mkdir(group.path, 0o755) == 0 else { return nil }
        guard group.write("pids.max", "\(limit)") else {
            group.remove()
            return nil
        }
        return group
    }

    func remove() { rmdir(path) }
}

struct PidsGroup {
    let path: String

    func add(pid: pid_t) -> Bool { write("cgroup.procs", "\(pid)") }

    /// The processes still in the group (an app's children can outlive it).
    var processes: [pid_t] {
        ((try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Kills whatever is left in the group, then removes it.
    func remove() {
        for _ in 0..<50 {
            let left = processes
            if left.isEmpty { break }
            for pid in left { kill(pid, SIGKILL) }
            usleep(1000)
        }
        rmdir(path)
    }

    @discardableResult
    func write(_ file: String, _ value: String) -> Bool {
        let fd = open(path + "/" + file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return value.withCString { Glibc.write(fd, $0, strlen($0)) } >= 0
    }
}
