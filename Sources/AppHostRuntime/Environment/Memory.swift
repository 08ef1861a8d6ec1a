#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// How the host holds each app to its memory limit.
public enum MemoryEnforcement: String, Sendable {
    /// The cgroup v1 memory controller: the kernel stops the app at its limit and tells the host
    /// at once (an OOM eventfd), which ends it and says why.
    case cgroup = "memory cgroup"
    /// The host measures each running app every `resourceSampleInterval` and ends one over its
    /// limit; an app can overshoot between two measurements.
    case sampling
}

/// What the host counts as an app's memory: its resident anonymous memory (heap, stacks,
/// anonymous mappings; `resident - shared` of /proc/PID/statm), summed over its processes.
/// Shared libraries and the page cache are not counted: they are shared and reclaimable, as
/// iOS's footprint leaves out clean pages.
enum MemoryFootprint {
    private static let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))

    static func of(_ pids: [pid_t]) -> UInt64 {
        var total: UInt64 = 0
        for pid in pids {
            let fields = readSmallFile("/proc/\(pid)/statm").split(separator: " ")
            guard fields.count >= 3, let resident = UInt64(fields[1]), let shared = UInt64(fields[2]) else { continue }
            total += resident > shared ? (resident - shared) * pageSize : 0
        }
        return total
    }

    /// Memory the host may use in all: its memory cgroup's limit where it has one, else the
    /// machine's memory.
    static func hostCapacity() -> UInt64 {
        let meminfo = readSmallFile("/proc/meminfo")
        var total: UInt64 = 0
        if let line = meminfo.split(separator: "\n").first(where: { $0.hasPrefix("MemTotal:") }),
           let kib = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) }) {
            total = kib * 1024
        }
        if let directory = Cgroup.hostDirectory(in: .controller("memory")),
           let limit = UInt64(readSmallFile(directory + "/memory.limit_in_bytes").trimmingCharacters(in: .whitespacesAndNewlines)),
           limit > 0, total == 0 || limit < total {
            return limit
        }
        return total
    }
}

/// One app process's group in the cgroup v1 memory controller. The kernel's OOM killer is
/// disabled in it: at its limit the app's allocations wait and the kernel signals `oomEvents`,
/// so the host (not the kernel, which might pick a child) ends the app and writes the report.
/// Touched only on the supervisor's queue (hence `@unchecked Sendable`).
final class MemoryGroup: @unchecked Sendable {
    let group: Cgroup
    /// An eventfd the kernel signals when the group is out of memory.
    let oomEvents: Int32
    private let hasSwapLimit: Bool
    /// The limit in force; a new group has none (the kernel's "unlimited").
    private(set) var limit: UInt64 = .max

    private init(group: Cgroup, oomEvents: Int32) {
        self.group = group
        self.oomEvents = oomEvents
        hasSwapLimit = access(group.path + "/memory.memsw.limit_in_bytes", W_OK) == 0
    }

    static func make(in hierarchy: Cgroup, named name: String, limit: UInt64) -> MemoryGroup? {
        guard let group = try? hierarchy.makeChild(named: name) else { return nil }
        let control = open(group.path + "/memory.oom_control", O_RDONLY | O_CLOEXEC)
        let events = apphost_eventfd()
        guard control >= 0, events >= 0,
              (try? group.write("memory.oom_control", "1")) != nil,
              (try? group.write("cgroup.event_control", "\(events) \(control)")) != nil
        else {
            if control >= 0 { close(control) }
            if events >= 0 { close(events) }
            group.remove()
            return nil
        }
        // Registered, the event holds the group and the eventfd, not the control file (the
        // kernel puts it once the event is made): one descriptor an app fewer (docs/launching.md, "How
        // many apps fit").
        close(control)
        let memory = MemoryGroup(group: group, oomEvents: events)
        guard memory.setLimit(limit) else {
            memory.remove()
            return nil
        }
        return memory
    }

    /// Sets the limit (and the same limit on memory plus swap, so the app cannot swap past it).
    /// False if the app already uses more than `bytes` and the kernel cannot reclaim enough.
    func setLimit(_ bytes: UInt64) -> Bool {
        // memsw may never be below the plain limit: raise it first, lower it last.
        if hasSwapLimit && bytes > limit { try? group.write("memory.memsw.limit_in_bytes", "\(bytes)") }
        guard (try? group.write("memory.limit_in_bytes", "\(bytes)")) != nil else {
            if hasSwapLimit && bytes > limit { try? group.write("memory.memsw.limit_in_bytes", "\(limit)") }
            return false
        }
        if hasSwapLimit && bytes < limit { try? group.write("memory.memsw.limit_in_bytes", "\(bytes)") }
        limit = bytes
        return true
    }

    /// Whether the app is stopped at its limit (`under_oom 1`).
    var isUnderOOM: Bool {
        group.read("memory.oom_control").split(separator: "\n").contains("under_oom 1")
    }

    /// Removes the group (killing anything left in it). The OOM eventfd belongs to the source
    /// that watches it.
    func remove(sparing: pid_t? = nil) {
        group.remove(sparing: sparing)
    }

    /// Removes a group nothing watches yet, closing its eventfd too.
    func discard(sparing: pid_t? = nil) {
        remove(sparing: sparing)
        close(oomEvents)
    }
}
