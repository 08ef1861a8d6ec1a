#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

extension HostCapacity {
    /// Raises the host's soft open-file limit to its hard limit (which is the administrator's:
    /// `ulimit -Hn`, LimitNOFILE=, or the benchmark's raised one): each app holds about eight of
    /// the host's descriptors (its control socket, pidfd, output pipe, diagnostics socket,
    /// seccomp listener…), and the usual soft limit of 1,024 would end a host at about a hundred
    /// apps. Apps set their own (the policy's openFiles). Returns the limit in force.
    @discardableResult
    static func raiseDescriptorLimit() -> Int {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return Int(min(limit.rlim_cur, rlim_t(Int.max)))
    }

    /// How many apps this host can hold, under the limits it runs with now.
    static func measure(descriptorLimit: Int) -> HostCapacity {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        let pidMax = Int(readSmallFile("/proc/sys/kernel/pid_max").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 32768
        // /proc/loadavg: "0.20 0.18 0.12 1/80 11206": the fourth field's second half is every
        // task (process and thread) of the machine.
        let tasks = readSmallFile("/proc/loadavg").split(separator: " ").dropFirst(3).first?
            .split(separator: "/").last.flatMap { Int($0) } ?? 0
        return HostCapacity(descriptors: descriptorLimit, openAtStart: open, pidMax: pidMax, tasksAtStart: tasks)
    }
}
