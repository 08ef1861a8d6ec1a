import Foundation
import AppHostRuntime
#if canImport(Glibc)
import Glibc
#endif

// MARK: Many apps in one host (`--scale N`)

/// What one scale run measured.
struct ScaleResult {
    var apps: Int
    /// The host's resident memory with every app suspended (VmRSS).
    var hostRssMiB: Double
    /// The host's CPU time, in clock ticks (USER_HZ), over `idleSeconds` with every app suspended.
    var hostIdleTicks: Int
    var idleSeconds: Double
    /// Launch to applicationDidBecomeActive of the first and the last tenth of the apps.
    var firstTenth: Sample
    var lastTenth: Sample
    /// The host's own CPU time per launch (and suspension) in the first and the last tenth, in
    /// milliseconds: what of a launch's growth is the host's.
    var hostCpuFirstTenthMs: Double
    var hostCpuLastTenthMs: Double
    /// The mean proportional set size of a suspended app process.
    var pssPerAppMiB: Double
    /// How long the launches and suspensions took together, in seconds.
    var seconds: Double
    /// Why the run stopped early, if it did.
    var stopped: String?
}

/// The JSON event lines of an `apphost launch --json` host, as they arrive.
final class HostLines: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [(event: String, name: String, pid: Int32?, at: UInt64, reason: String?)] = []
    private var ended = false

    /// Reads `fd` to its end on a thread of its own.
    func start(reading fd: Int32) {
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = Glibc.read(fd, &buffer, buffer.count)
                if count <= 0 { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: 10) {
                    let line = Array(pending[..<newline])
                    pending.removeSubrange(...newline)
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                          let event = object["event"] as? String else { continue }
                    let at = now()
                    condition.lock()
                    lines.append((event, object["name"] as? String ?? "", (object["pid"] as? NSNumber).map { $0.int32Value }, at, object["reason"] as? String))
                    condition.broadcast()
                    condition.unlock()
                }
            }
            condition.lock()
            ended = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Waits (at most `timeout` seconds) for the next `event` of app `name` after `index`.
    func next(_ event: String, of name: String, after index: inout Int, timeout: Double = 60) -> (pid: Int32?, at: UInt64)? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let found = lines[index...].firstIndex(where: { $0.event == event && $0.name == name }) {
                index = found + 1
                return (lines[found].pid, lines[found].at)
            }
            if ended || !condition.wait(until: deadline) { return nil }
        }
    }

    /// The first event named `event` for any app after `index` (a termination while waiting):
    /// "NAME EVENT: REASON".
    func any(_ event: String, after index: Int) -> String? {
        condition.lock()
        defer { condition.unlock() }
        return lines[index...].first { $0.event == event }.map { "\($0.name) \(event)\($0.reason.map { ": \($0)" } ?? "")" }
    }
}

/// Reads a `Key:  N kB` line of a /proc file, in KiB.
func procKibibytes(_ path: String, _ key: String) -> Double? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Double(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
    }
    return nil
}

/// utime + stime of a process, in clock ticks.
func cpuTicks(_ pid: pid_t) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14 and stime 15 (proc(5)).
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
    return user + system
}

/// N copies of `bundle` (Hello), each its own app, launched to the foreground and sent home to
/// be suspended one after another in one real host (`apphost launch --json`, a process of its
/// own, so that its resident memory and CPU time are the host's alone). Then, with every app
/// suspended: the host's RSS, its CPU ticks over `idleSeconds`, and each app process's PSS.
func benchmarkScale(executable: String, bundle: URL, apps count: Int, launcher: String, idleSeconds: Double = 10) -> ScaleResult {
    raiseTaskLimit(forApps: count)
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-scale-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let bundles = scratch.appendingPathComponent("bundles")
    try! FileManager.default.createDirectory(at: bundles, withIntermediateDirectories: true)
    // The plugin and the SDK it was linked against: every file but Info.plist.
    let files = try! FileManager.default.contentsOfDirectory(atPath: bundle.path).filter { $0 != "Info.plist" }
    var info = try! PropertyListSerialization.propertyList(
        from: Data(contentsOf: bundle.appendingPathComponent("Info.plist")), format: nil) as! [String: Any]
    let names = (0..<count).map { String(format: "Hello%05d", $0) }
    for name in names {
        let url = bundles.appendingPathComponent("\(name).app")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for file in files { linkBundleFile(file, from: bundle, to: url) }
        info["CFBundleName"] = name
        info["CFBundleIdentifier"] = "benchmark.scale.\(name.lowercased())"
        try! PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: url.appendingPathComponent("Info.plist"))
    }

    // The host: its events on a pipe, the apps' output to /dev/null, commands on another pipe.
    var input: [Int32] = [-1, -1]
    var output: [Int32] = [-1, -1]
    pipe(&input)
    pipe(&output)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, input[0], 0)
    posix_spawn_file_actions_adddup2(&actions, output[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    for fd in input + output { posix_spawn_file_actions_addclose(&actions, fd) }
    let arguments = [
        executable, "launch", "--json", "--launcher", launcher, "--state-dir", scratch.appendingPathComponent("state").path,
        "--instance", "benchmark-scale-\(getpid())", "--storage", "accounting",
        // Every app stays: the apps together may use what the machine has.
        "--memory-budget", "\(1 << 20)",
    ] + names.map { bundles.appendingPathComponent("\($0).app").path }
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var host: pid_t = 0
    guard posix_spawn(&host, executable, &actions, nil, argv, environ) == 0 else { fatalError("cannot start \(executable)") }
    close(input[0])
    close(output[1])
    let lines = HostLines()
    lines.start(reading: output[0])
    func command(_ text: String) {
        _ = (text + "\n").withCString { write(input[1], $0, strlen($0)) }
    }

    var cursor = 0
    var launches: [Double] = []
    var pids: [Int32] = []
    var stopped: String?
    let start = now()
    let tenth = max(1, (count - 1) / 10)
    var tenthTicks: [Int] = []
    for (index, name) in names.enumerated() {
        // The host's CPU time over the first and the last tenth of the measured launches.
        if [1, 1 + tenth, count - tenth].contains(index) { tenthTicks.append(cpuTicks(host) ?? 0) }
        // The first app comes to the foreground with the host; each other is opened.
        let sent = now()
        if index > 0 { command("open \(name)") }
        guard let active = lines.next("didBecomeActive", of: name, after: &cursor) else {
            stopped = "\(name) did not become active (\(lines.any("terminated", after: 0) ?? "no event"))"
            break
        }
        launches.append(Double(active.at - (index > 0 ? sent : start)) / 1e6)
        command("home")
        guard lines.next("suspended", of: name, after: &cursor) != nil else {
            stopped = "\(name) was not suspended"
            break
        }
        if let pid = active.pid { pids.append(pid) }
    }
    tenthTicks.append(cpuTicks(host) ?? 0)
    let seconds = Double(now() - start) / 1e9
    let tick = 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    func cpuPerLaunch(_ from: Int, _ to: Int) -> Double {
        tenthTicks.count == 4 ? Double(tenthTicks[to] - tenthTicks[from]) * tick / Double(tenth) : 0
    }
    // Launches and suspensions are over: the host should now be idle.
    usleep(500_000)
    let rss = (procKibibytes("/proc/\(host)/status", "VmRSS") ?? 0) / 1024
    let ticksBefore = cpuTicks(host) ?? 0
    usleep(UInt32(idleSeconds * 1_000_000))
    let ticks = (cpuTicks(host) ?? 0) - ticksBefore
    let pss = pids.compactMap { procKibibytes("/proc/\($0)/smaps_rollup", "Pss") }
    command("quit")
    close(input[1])
    var status: Int32 = 0
    waitpid(host, &status, 0)
    close(output[0])
    // The first launch also starts the host: it is not one of the measured launches.
    let measured = Array(launches.dropFirst())
    return ScaleResult(
        apps: launches.count, hostRssMiB: rss, hostIdleTicks: ticks, idleSeconds: idleSeconds,
        firstTenth: Sample(label: "launch, first tenth of \(count) apps", values: Array(measured.prefix(tenth))),
        lastTenth: Sample(label: "launch, last tenth of \(count) apps", values: Array(measured.suffix(tenth))),
        hostCpuFirstTenthMs: cpuPerLaunch(0, 1), hostCpuLastTenthMs: cpuPerLaunch(2, 3),
        pssPerAppMiB: pss.isEmpty ? 0 : pss.reduce(0, +) / Double(pss.count) / 1024, seconds: seconds, stopped: stopped)
}

/// Each app holds HostCapacity.descriptorsPerApp of the host's descriptors and about
/// HostCapacity.tasksPerApp tasks (its process's threads and its namespace's init): a run of
/// thousands needs more than a usual RLIMIT_NOFILE (the host raises its soft limit to the hard
/// one, no further) and the kernel's default pid_max (32768). As root, the benchmark raises the
/// hard open-file limit it hands the host (to fs.nr_open) and pid_max (to 4194304, the kernel's
/// most), and says so; otherwise the host refuses the launches past them, naming the limit.
func raiseTaskLimit(forApps count: Int) {
    let needed = count * HostCapacity.descriptorsPerApp + HostCapacity.descriptorReserve + 1024
    var files = rlimit()
    if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_max < rlim_t(needed),
       let ceiling = (try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8)).flatMap({ rlim_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
        var raised = rlimit(rlim_cur: ceiling, rlim_max: ceiling)
        if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 {
            FileHandle.standardError.write(Data("benchmark: raised RLIMIT_NOFILE from \(files.rlim_max) to \(ceiling) for \(count) apps\n".utf8))
        } else {
            // A container may forbid it even to root (no CAP_SYS_RESOURCE): the host then
            // stops the run at its capacity, with a line naming the limit.
            let reason = String(cString: strerror(errno))
            FileHandle.standardError.write(Data("benchmark: cannot raise RLIMIT_NOFILE above \(files.rlim_max) for \(count) apps (\(reason)); the host will refuse the launches past its capacity\n".utf8))
        }
    }
    let path = "/proc/sys/kernel/pid_max"
    guard let current = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
          current < count * (HostCapacity.tasksPerApp + 1) + 4096, geteuid() == 0 else { return }
    if (try? "4194304".write(toFile: path, atomically: false, encoding: .utf8)) != nil {
        FileHandle.standardError.write(Data("benchmark: raised kernel.pid_max from \(current) to 4194304 for \(count) apps\n".utf8))
    }
}
