#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One cgroup v1 controller's directory for this host instance: `MOUNT/OWN/apphost-INSTANCE-PID`,
/// where OWN is the host's own group in that hierarchy (so apps stay inside whatever limits the
/// host itself is under). Each app process gets a group below it:
///
/// - pids: at most `processLimit` tasks (where there is none, the runner sets RLIMIT_NPROC,
///   which counts per uid and so needs a per-app user);
/// - memory: the app's foreground or background memory limit (where there is none, the host
///   samples each app's memory instead).
final class ControllerHierarchy {
    let path: String

    private init(path: String) { self.path = path }

    /// The directory of the host's own group for `controller`; nil if it is not mounted.
    static func hostDirectory(controller: String) -> String? { hostCgroupDirectory(controller: controller) }

    static func create(controller: String, instance: String) -> ControllerHierarchy? {
        guard let base = hostDirectory(controller: controller), access(base + "/cgroup.procs", W_OK) == 0 else { return nil }
        removeStaleInstances(in: base)
        let path = "\(base)/apphost-\(instance)-\(getpid())"
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { return nil }
        return ControllerHierarchy(path: path)
    }

    /// Removes the groups of hosts that are gone (a host killed by SIGKILL leaves them).
    private static func removeStaleInstances(in base: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for entry in entries where entry.hasPrefix("apphost-") {
            guard let pid = entry.split(separator: "-").last.flatMap({ Int32($0) }), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let directory = "\(base)/\(entry)"
            for child in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                ControllerGroup(path: "\(directory)/\(child)").remove()
            }
            rmdir(directory)
        }
    }

    func makeGroup(named name: String) -> ControllerGroup? {
        let group = ControllerGroup(path: "\(path)/\(name)")
        guard mkdir(group.path, 0o755) == 0 else { return nil }
        return group
    }

    /// A pids group for one app process, holding at most `limit` tasks (threads and processes).
    func makePidsGroup(named name: String, limit: Int) -> ControllerGroup? {
        guard let group = makeGroup(named: name) else { return nil }
        guard group.write("pids.max", "\(limit)") else {
            group.remove()
            return nil
        }
        return group
    }

    func remove() { rmdir(path) }
}

/// One app's group in a cgroup v1 controller.
struct ControllerGroup {
    let path: String

    func add(pid: pid_t) -> Bool { write("cgroup.procs", "\(pid)") }

    /// The processes in the group: the app and any children (which can outlive it).
    var processes: [pid_t] {
        read("cgroup.procs").split(separator: "\n").compactMap { pid_t($0) }
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

    func read(_ file: String) -> String { readSmallFile(path + "/" + file) }

    /// Writes `value` to a control file; false (with errno) if the kernel refuses it.
    @discardableResult
    func write(_ file: String, _ value: String) -> Bool {
        let fd = open(path + "/" + file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer {
            let saved = errno
            close(fd)
            errno = saved
        }
        return value.withCString { Glibc.write(fd, $0, strlen($0)) } >= 0
    }
}

/// The directory of the host's own cgroup: in the cgroup v1 hierarchy of `controller`, or with
/// nil in the cgroup v2 hierarchy. From /proc/self/mountinfo (where the hierarchy is mounted) and
/// /proc/self/cgroup (the host's group in it); nil if the hierarchy is not mounted.
func hostCgroupDirectory(controller: String?) -> String? {
    guard let mountinfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
          let cgroups = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
    else { return nil }
    var mountPoint: String?
    for line in mountinfo.split(separator: "\n") {
        // "… /sys/fs/cgroup/memory rw,… - cgroup cgroup rw,memory" or "… - cgroup2 cgroup2 rw"
        let halves = line.components(separatedBy: " - ")
        guard halves.count == 2 else { continue }
        let source = halves[1].split(separator: " ")
        let matches = controller.map { controller in
            source.first == "cgroup" && source.last?.split(separator: ",").contains(Substring(controller)) == true
        } ?? (source.first == "cgroup2")
        guard matches else { continue }
        let fields = halves[0].split(separator: " ")
        if fields.count > 4 { mountPoint = String(fields[4]) }
    }
    guard let mountPoint else { return nil }
    for line in cgroups.split(separator: "\n") {
        // "4:memory:/process_api/d1b9…", or "0::/…" for cgroup v2
        let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3 else { continue }
        let own = controller.map { fields[1].split(separator: ",").contains(Substring($0)) } ?? (fields[0] == "0" && fields[1].isEmpty)
        if own { return mountPoint + (fields[2] == "/" ? "" : String(fields[2])) }
    }
    return controller == nil ? nil : mountPoint
}
