#if canImport(Glibc)
package import Glibc
#endif

/// A cgroup directory, in the cgroup v2 hierarchy or in one cgroup v1 controller's: the same
/// files (`cgroup.procs`, control files) and the same life (make, fill, empty, remove).
package struct Cgroup: Equatable, Sendable {
    /// A hierarchy: the unified (v2) one, or the v1 hierarchy of one controller.
    package enum Hierarchy: Equatable, Sendable, CustomStringConvertible {
        case unified
        case controller(String)

        package var description: String {
            switch self {
            case .unified: "cgroup v2"
            case .controller(let name): "cgroup v1 \(name)"
            }
        }
    }

    package let path: String

    package init(path: String) { self.path = path }

    /// Makes a group below this one.
    package func makeChild(named name: String) throws(SystemError) -> Cgroup {
        let child = Cgroup(path: "\(path)/\(name)")
        try valueOrErrno("mkdir \(child.path)") { mkdir(child.path, 0o755) }
        return child
    }

    package func read(_ file: String) -> String { readSmallFile(path + "/" + file) }

    package func write(_ file: String, _ value: String) throws(SystemError) {
        try writeControlFile(path + "/" + file, value)
    }

    /// Whether the host may write this control file.
    package func canWrite(_ file: String) -> Bool { access(path + "/" + file, W_OK) == 0 }

    package func add(pid: pid_t) throws(SystemError) { try write("cgroup.procs", "\(pid)") }

    /// The processes in the group: an app and any children (which can outlive it).
    package var processes: [pid_t] {
        read("cgroup.procs").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Kills every process in the group at once (v2 `cgroup.kill`, Linux 5.14); false where
    /// the kernel or the hierarchy has no such file.
    package func killAll() -> Bool { (try? write("cgroup.kill", "1")) != nil }

    /// Kills whatever is left in the group and removes it, without waiting. False while the
    /// kernel still holds it (a killed process that has not finished exiting, or `sparing`, a
    /// process that is not the group's to kill and is on its way out): try again later.
    @discardableResult
    package func remove(sparing: pid_t? = nil) -> Bool {
        if sparing != nil || !killAll() {
            for pid in processes where pid != sparing { kill(pid, SIGKILL) }
        }
        do {
            try valueOrErrno("rmdir \(path)") { rmdir(path) }
            return true
        } catch {
            return error.errno == ENOENT
        }
    }

    /// Removes the group, waiting up to `limit` for what was in it to exit: for start and
    /// shutdown, when nothing else waits on the host. A group still held after that (a process
    /// stuck in the kernel) stays; the next host to start sweeps it.
    package func removeWaiting(upTo limit: Duration = .milliseconds(100)) {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while !remove() && clock.now < deadline { usleep(1000) }
    }

    /// The groups directly below this one: its subdirectories. (In a v1 hierarchy some control
    /// files, `tasks` and `notify_on_release`, have no dot in their names either.)
    package var subgroups: [Cgroup] {
        subdirectories(path).map { Cgroup(path: "\(path)/\($0)") }
    }

    /// Removes the group and every group below it, deepest first, each as `removeWaiting` does.
    package func removeTree() {
        for subgroup in subgroups { subgroup.removeTree() }
        removeWaiting()
    }

    /// This host instance's group in `hierarchy`: `apphost-INSTANCE-PID` under the host's own
    /// group there (so apps stay inside whatever limits the host itself is under), after
    /// sweeping the groups of hosts that are gone (a host killed by SIGKILL leaves them).
    package static func instance(_ name: String, in hierarchy: Hierarchy) throws(CgroupUnavailable) -> Cgroup {
        guard let base = hostDirectory(in: hierarchy) else {
            throw CgroupUnavailable(reason: "no \(hierarchy) hierarchy is mounted")
        }
        let host = Cgroup(path: base)
        guard hierarchy == .unified || host.canWrite("cgroup.procs") else {
            throw CgroupUnavailable(reason: "\(base)/cgroup.procs is not writable")
        }
        for name in subdirectories(base) where name.hasPrefix("apphost-") {
            guard let pid = name.split(separator: "-").last.flatMap({ pid_t($0) }), !processExists(pid) else { continue }
            Cgroup(path: "\(base)/\(name)").removeTree()
        }
        do {
            return try host.makeChild(named: "apphost-\(name)-\(getpid())")
        } catch where error.errno == EEXIST {
            return Cgroup(path: "\(base)/apphost-\(name)-\(getpid())")
        } catch {
            throw CgroupUnavailable(reason: "cannot create a group in \(base): \(error)")
        }
    }

    /// The directory of the host's own group in `hierarchy`, from /proc/self/mountinfo (where
    /// the hierarchy is mounted) and /proc/self/cgroup (the host's group in it); nil if the
    /// hierarchy is not mounted.
    package static func hostDirectory(in hierarchy: Hierarchy) -> String? {
        var mountPoint: String?
        for line in readSmallFile("/proc/self/mountinfo").split(separator: "\n") {
            // "… /sys/fs/cgroup/memory rw,… - cgroup cgroup rw,memory" or "… - cgroup2 cgroup2 rw"
            let halves = line.split(separator: " - ", omittingEmptySubsequences: false)
            guard halves.count == 2 else { continue }
            let source = halves[1].split(separator: " ")
            let matches: Bool
            switch hierarchy {
            case .unified: matches = source.first == "cgroup2"
            case .controller(let name):
                matches = source.first == "cgroup" && source.last?.split(separator: ",").contains(Substring(name)) == true
            }
            guard matches else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count > 4 { mountPoint = String(fields[4]) }
        }
        guard let mountPoint else { return nil }
        for line in readSmallFile("/proc/self/cgroup").split(separator: "\n") {
            // "4:memory:/process_api/d1b9…", or "0::/…" for cgroup v2
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let own: Bool
            switch hierarchy {
            case .unified: own = fields[0] == "0" && fields[1].isEmpty
            case .controller(let name): own = fields[1].split(separator: ",").contains(Substring(name))
            }
            if own { return mountPoint + (fields[2] == "/" ? "" : String(fields[2])) }
        }
        return hierarchy == .unified ? nil : mountPoint
    }
}

/// Why a cgroup hierarchy cannot be used here, for `doctor` and the `started` event.
package struct CgroupUnavailable: Error, CustomStringConvertible {
    package var reason: String
    package init(reason: String) { self.reason = reason }
    package var description: String { reason }
}
