#if canImport(Glibc)
package import Glibc
#endif

/// Readers of /proc.
package enum ProcFS {
    /// The process's CPU time so far, all its threads', user and system: its CPU-time clock,
    /// in nanoseconds. (/proc/PID/stat's utime and stime say the same in clock ticks, 10 ms
    /// here, and cost a file's opening and formatting: the host asks at every state change.)
    package static func cpuTime(pid: pid_t) -> Duration? {
        var clock = clockid_t()
        var time = timespec()
        guard pid > 0, clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 else { return nil }
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// Whether every thread of `pid` is stopped (state T or t in /proc/PID/task/TID/stat).
    package static func allThreadsStopped(pid: pid_t) -> Bool {
        let tasks = directoryEntries("/proc/\(pid)/task")
        guard !tasks.isEmpty else { return false }
        return tasks.allSatisfy { task in
            let state = statFields("/proc/\(pid)/task/\(task)/stat").first
            return state == "T" || state == "t"
        }
    }

    /// Whether the process is stopped (state T or t in /proc/PID/stat).
    package static func isStopped(pid: pid_t) -> Bool {
        let state = statFields("/proc/\(pid)/stat").first
        return state == "T" || state == "t"
    }

    /// The children of `pid`: from /proc/PID/task/PID/children, or where the kernel lacks that
    /// file, from the parent pid of every process.
    package static func children(of pid: pid_t) -> [pid_t] {
        let path = "/proc/\(pid)/task/\(pid)/children"
        if access(path, F_OK) == 0 {
            return readSmallFile(path).split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) }
        }
        return directoryEntries("/proc").compactMap(pid_t.init).filter { candidate in
            statFields("/proc/\(candidate)/stat").dropFirst().first.flatMap { pid_t($0) } == pid
        }
    }

    /// The fields of a stat file after the command (which may contain spaces and parentheses).
    private static func statFields(_ path: String) -> [Substring] {
        let stat = readSmallFile(path)
        guard let close = stat.lastIndex(of: ")") else { return [] }
        return stat[stat.index(after: close)...].split(separator: " ")
    }
}

/// The names in a directory, without "." and ".."; empty if it cannot be read.
package func directoryEntries(_ path: String) -> [String] {
    names(in: path) { _ in true }
}

/// The names of the subdirectories of a directory (by the type readdir gives, which procfs,
/// sysfs and cgroupfs fill in); empty if it cannot be read.
package func subdirectories(_ path: String) -> [String] {
    names(in: path) { $0 == DT_DIR }
}

private func names(in path: String, ofType accepts: (Int) -> Bool) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        guard accepts(Int(entry.pointee.d_type)) else { continue }
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// Whether a process with this pid exists (kill with signal 0; EPERM means it does).
package func processExists(_ pid: pid_t) -> Bool {
    do {
        try valueOrErrno("kill(\(pid), 0)") { kill(pid, 0) }
        return true
    } catch {
        return error.errno != ESRCH
    }
}
