// Measures apphost's life-cycle costs against baselines taken in the same run, on the same machine:
//
//   launch to applicationDidBecomeActive acknowledged   vs  posix_spawn + wait of /bin/true
//                                                        and the app process with its plugin loaded
//   suspend (freeze request to all threads stopped)     vs  raw SIGSTOP until the group stop is reported
//   resume                                              vs  raw SIGCONT until the continue is reported
//   one delegate callback round trip                    vs  a 64-byte pipe round trip through /bin/cat
//   getppid under the app's seccomp filter              vs  the same loop unconfined
//   the confinement step (caps, user, Landlock, seccomp)    as a share of the launch
//   launch of a confined trivial app                    vs  bwrap and firejail running /bin/true
//   ps answered while another app floods its stdout     vs  ps answered with that app idle
//   first launch with its container image made and mounted, and later launches
//                                                        vs  the same launches with accounting only
//
// Run: scripts/benchmark (builds in release, bundles Hello, runs this). The machine is shared and
// noisy: compare the ratios within one run, not absolute numbers across runs.

import ArgumentParser
import AppHostProtocol
import AppHostRuntime
import AppHostSandbox
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: Measuring

func now() -> UInt64 { MonotonicClock().now.nanoseconds }

struct Sample {
    var label: String
    var values: [Double]  // milliseconds

    func percentile(_ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    var median: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }
}

func measure(_ label: String, runs: Int, _ body: () -> Double) -> Sample {
    _ = body()  // warm-up
    return Sample(label: label, values: (0..<runs).map { _ in body() })
}

// MARK: The seccomp filter's cost

/// `apphost-benchmark --syscall-loop confined|unconfined N`: times N getppid calls, after loading
/// the app profile or not, and prints nanoseconds per call. Run as a child, since a filter cannot
/// be unloaded.
func syscallLoop(confined: Bool, count: Int) -> Never {
    if confined {
        try! Confinement.forbidNewPrivileges()
        _ = try! Seccomp.install(Seccomp.compile(SyscallProfile(entitlements: [], ownPID: getpid())))
    }
    for _ in 0..<10_000 { _ = getppid() }
    let start = now()
    for _ in 0..<count { _ = getppid() }
    let perCall = Double(now() - start) / Double(count)
    let text = String(format: "%.2f\n", perCall)
    _ = text.withCString { write(1, $0, strlen($0)) }
    _exit(0)
}

/// Runs `command` with `arguments` and returns what it printed and how long it took (ms).
func run(_ command: String, _ arguments: [String]) -> (output: String, milliseconds: Double)? {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([command] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let start = now()
    var pid: pid_t = 0
    guard posix_spawn(&pid, command, &actions, nil, argv, environ) == 0 else { return nil }
    close(fds[1])
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(fds[0], &buffer, buffer.count)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    close(fds[0])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    let elapsed = Double(now() - start) / 1e6
    return status == 0 ? (String(decoding: bytes, as: UTF8.self), elapsed) : nil
}

// MARK: Baselines

func spawnTrue() -> Double {
    let start = now()
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { fatalError("cannot spawn /bin/true") }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return Double(now() - start) / 1e6
}

/// A child that sleeps, for raw SIGSTOP/SIGCONT; returns (stop, continue) times in ms.
func rawStopContinue(runs: Int) -> (Sample, Sample) {
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("600"), nil]
    defer { argv.forEach { free($0) } }
    posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ)
    defer {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
    var stops: [Double] = []
    var continues: [Double] = []
    var info = siginfo_t()
    for _ in 0..<runs {
        var start = now()
        kill(pid, SIGSTOP)
        waitid(P_PID, id_t(pid), &info, WSTOPPED)
        stops.append(Double(now() - start) / 1e6)
        start = now()
        kill(pid, SIGCONT)
        waitid(P_PID, id_t(pid), &info, WCONTINUED)
        continues.append(Double(now() - start) / 1e6)
    }
    return (Sample(label: "raw SIGSTOP, group stop reported", values: stops),
            Sample(label: "raw SIGCONT, continue reported", values: continues))
}

/// 64-byte round trips through /bin/cat over two pipes.
func pipeRoundTrips(runs: Int) -> Sample {
    var toCat: [Int32] = [0, 0]
    var fromCat: [Int32] = [0, 0]
    pipe(&toCat)
    pipe(&fromCat)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, toCat[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromCat[1], 1)
    for fd in toCat + fromCat { posix_spawn_file_actions_addclose(&actions, fd) }  // cat must see EOF
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/cat"), nil]
    posix_spawn(&pid, "/bin/cat", &actions, nil, argv, environ)
    close(toCat[0])
    close(fromCat[1])
    var message = [UInt8](repeating: 65, count: 64)
    let sample = measure("64-byte pipe round trip through /bin/cat", runs: runs) {
        let start = now()
        _ = write(toCat[1], &message, 64)
        var got = 0
        while got < 64 { got += message.withUnsafeMutableBytes { read(fromCat[0], $0.baseAddress! + got, 64 - got) } }
        return Double(now() - start) / 1e6
    }
    close(toCat[1])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return sample
}

// MARK: apphost

/// A host in this process with `bundle` installed, on a state directory of its own (the last
/// host may still be letting go of its instance), the apps' output dropped.
func benchmarkHost(
    _ name: String, mechanism: SuspensionMechanism? = nil, launcher: Launcher? = nil, bundle: AppBundle, executable: String
) -> (supervisor: Supervisor, log: EventLog, state: URL) {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-\(getpid())-\(name)")
    var configuration = Supervisor.Configuration(stateDirectory: state, executable: executable)
    if let mechanism { configuration.suspension = mechanism }
    if let launcher { configuration.launcher = launcher }
    configuration.forwardAppOutput = false
    // Storage costs are measured on their own (Storage.swift), against these same launches.
    configuration.storageMechanism = .accounting
    let log = EventLog()
    let supervisor = try! Supervisor(configuration: configuration) { log.record($0) }
    try! supervisor.install(bundle)
    return (supervisor, log, state)
}

/// Waits (at most a second) until the next launch would take an app process made ahead that
/// has finished starting, as a launch a person makes does: the launch figures measure that
/// launch. Launches back to back, faster than processes are made ahead, are slower (docs/launching.md,
/// "How apps are launched").
func waitForWarmStandby(_ supervisor: Supervisor) {
    let deadline = now() + 1_000_000_000
    while supervisor.isStandbyWarm == false, now() < deadline { usleep(1000) }
}

/// With `interleaving`, that baseline is taken after each launch's app has ended (`interleaved`):
/// drift on a shared machine then falls on the launch and its baseline alike.
func benchmarkApphost(
    mechanism: SuspensionMechanism, launcher: Launcher? = nil, bundle: AppBundle, executable: String, runs: Int,
    interleaving baseline: (() -> Double?)? = nil
) -> (launch: Sample, loaded: Sample, confinement: Sample, suspend: Sample, resume: Sample, callback: Sample, interleaved: [Double]) {
    let (supervisor, log, state) = benchmarkHost(
        "\(mechanism.rawValue)-\(launcher?.rawValue ?? "default")", mechanism: mechanism, launcher: launcher,
        bundle: bundle, executable: executable)
    defer { try? FileManager.default.removeItem(at: state) }
    var cursor = 0

    var launches: [Double] = []
    var loads: [Double] = []
    var confinements: [Double] = []
    var interleaved: [Double] = []
    for _ in 0...runs {
        let start = now()
        try! supervisor.launch(bundle.name, kind: .foreground)
        confinements.append(log.next("sandboxed", after: &cursor).event.elapsed!.seconds * 1000)
        let loaded = log.next("loaded", after: &cursor)
        let active = log.next("didBecomeActive", after: &cursor)
        launches.append(Double(active.at - start) / 1e6)
        loads.append(Double(loaded.at - start) / 1e6)
        try! supervisor.terminate(bundle.name)
        _ = log.next("terminated", after: &cursor)
        if let value = baseline?() { interleaved.append(value) }
        waitForWarmStandby(supervisor)
    }
    launches.removeFirst()  // warm-up
    if !interleaved.isEmpty { interleaved.removeFirst() }
    loads.removeFirst()
    confinements.removeFirst()

    try! supervisor.launch(bundle.name, kind: .foreground)
    _ = log.next("didBecomeActive", after: &cursor)
    var callbacks: [Double] = []
    for _ in 0...(runs * 4) {
        try! supervisor.memoryWarning(bundle.name)
        let event = log.next("didReceiveMemoryWarning", after: &cursor).event
        callbacks.append(event.elapsed!.seconds * 1000)
    }
    callbacks.removeFirst()

    var suspends: [Double] = []
    var resumes: [Double] = []
    for _ in 0...runs {
        supervisor.home()
        suspends.append(log.next("suspended", after: &cursor).event.elapsed!.seconds * 1000)
        try! supervisor.open(bundle.name)
        resumes.append(log.next("resumed", after: &cursor).event.elapsed!.seconds * 1000)
        _ = log.next("didBecomeActive", after: &cursor)
    }
    suspends.removeFirst()
    resumes.removeFirst()
    try! supervisor.terminate(bundle.name)
    _ = log.next("terminated", after: &cursor)
    return (
        Sample(label: "launch to applicationDidBecomeActive acknowledged", values: launches),
        Sample(label: "app process started, empty plugin loaded", values: loads),
        Sample(label: "confinement step in the app process (all of it)", values: confinements),
        Sample(label: "suspend (\(mechanism.rawValue)): request to all threads stopped", values: suspends),
        Sample(label: "resume (\(mechanism.rawValue))", values: resumes),
        Sample(label: "delegate callback round trip", values: callbacks),
        interleaved
    )
}

/// The 0xdead10cc check against a real app holding 1,000 descriptors (and a lock on the same
/// file system, so that every descriptor is examined: the worst case), beside the same app
/// holding none; then suspension of both, which includes the check.
func benchmarkSharedResourceCheck(executable: String, probe: URL, runs: Int) -> (check: Sample, checkBaseline: Sample, suspend: Sample, suspendBaseline: Sample) {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-locks-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    func bundle(_ name: String, hold: [String: Any]) -> AppBundle {
        let url = scratch.appendingPathComponent("\(name).app")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for file in try! FileManager.default.contentsOfDirectory(atPath: probe.path) where file != "Info.plist" {
            linkBundleFile(file, from: probe, to: url)
        }
        var info = try! PropertyListSerialization.propertyList(from: Data(contentsOf: probe.appendingPathComponent("Info.plist")), format: nil) as! [String: Any]
        info["CFBundleName"] = name
        info["CFBundleIdentifier"] = "benchmark.\(name.lowercased())"
        info["ProbeBehavior"] = ["hold": hold]
        info["AppHostEntitlements"] = ["com.apple.security.application-groups": ["group.benchmark"]]
        try! PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: url.appendingPathComponent("Info.plist"))
        return try! AppBundle(url: url)
    }
    let state = scratch.appendingPathComponent("state")
    var configuration = Supervisor.Configuration(stateDirectory: state, executable: executable)
    configuration.forwardAppOutput = false
    // Every container on the state directory's file system, the app's lock with the groups: with
    // a file system per container the lock would be elsewhere and the check would stop early.
    configuration.storageMechanism = .accounting
    let log = EventLog()
    let supervisor = try! Supervisor(configuration: configuration) { log.record($0) }
    let check = SharedResourceCheck(groupsDirectory: state.resolvingSymlinksInPath().appendingPathComponent("groups").path, declared: [])
    var cursor = 0
    var results: [(check: Sample, suspend: Sample)] = []
    for (name, hold) in [("Thousand", ["files": 1000] as [String: Any]), ("Few", ["files": 0])] {
        let app = bundle(name, hold: hold)
        try! supervisor.install(app)
        try! supervisor.launch(name, kind: .foreground)
        let pid = log.next("didBecomeActive", after: &cursor).event.pid!
        let checks = measure("", runs: runs * 4) {
            let start = now()
            precondition(check.held(by: [pid]).isEmpty)
            return Double(now() - start) / 1e6
        }
        var suspends: [Double] = []
        for _ in 0...runs {
            supervisor.home()
            suspends.append(log.next("suspended", after: &cursor).event.elapsed!.seconds * 1000)
            try! supervisor.open(name)
            _ = log.next("didBecomeActive", after: &cursor)
        }
        suspends.removeFirst()
        try! supervisor.terminate(name)
        _ = log.next("terminated", after: &cursor)
        results.append((checks, Sample(label: "", values: suspends)))
    }
    return (
        Sample(label: "0xdead10cc check, app with 1,000 fds", values: results[0].check.values),
        Sample(label: "check, app with a few fds", values: results[1].check.values),
        Sample(label: "suspend (with the check), app with 1,000 fds", values: results[0].suspend.values),
        Sample(label: "suspend, app with a few fds", values: results[1].suspend.values)
    )
}

// MARK: Report

func row(_ sample: Sample, against baseline: Sample?) -> String {
    func ms(_ value: Double) -> String { String(format: "%8.3f", value) }
    var line = sample.label.padding(toLength: 64, withPad: " ", startingAt: 0) + ms(sample.median) + ms(sample.p99)
    if let baseline {
        line += "   " + baseline.label.padding(toLength: 42, withPad: " ", startingAt: 0) + ms(baseline.median) + ms(baseline.p99)
        let ratio = sample.median / baseline.median
        line += ratio < 0.1 ? String(format: "   %5.1f %%", ratio * 100) : String(format: "   %6.1f×", ratio)
    }
    return line
}

// The benchmark runs itself for the getppid loops (loopNanoseconds): `--syscall-loop MODE COUNT`.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--syscall-loop" {
    syscallLoop(confined: CommandLine.arguments[2] == "confined", count: Int(CommandLine.arguments[3]) ?? 1_000_000)
}
let options = BenchmarkOptions.parseOrExit()
// With --json, standard output is the JSON object alone: every human line goes to standard error.
humanTableToStandardError = options.json
let runs = options.runs
let figures = Figures(json: options.json)
reportTransferThroughput(options, figures: figures)
let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
let executable = binaries.appendingPathComponent("apphost").path
let bundlePath = options.bundle
/// Ends the benchmark with `problem` and how to get what is missing.
func missing(_ problem: String) -> Never {
    FileHandle.standardError.write(Data("apphost-benchmark: \(problem) (scripts/benchmark builds apphost and the release bundles in .build/apps-release)\n".utf8))
    exit(1)
}
guard FileManager.default.isExecutableFile(atPath: executable) else { missing("\(executable) is missing") }
let bundle: AppBundle
do {
    bundle = try AppBundle(url: URL(fileURLWithPath: bundlePath))
} catch {
    missing("\(error)")
}

@MainActor func reportScale(apps count: Int) {
    let result = benchmarkScale(executable: executable, bundle: URL(fileURLWithPath: bundlePath), apps: count, launcher: options.launcher)
    figures.record(scale: result)
    say("scale: \(result.apps) of \(count) Hello apps launched and suspended one after another in one host, in \(String(format: "%.1f", result.seconds)) s"
        + (result.stopped.map { " (stopped: \($0))" } ?? ""))
    say(String(format: "  host RSS %.1f MiB; host CPU %d ticks in %.0f s with every app suspended; PSS per suspended app %.2f MiB",
               result.hostRssMiB, result.hostIdleTicks, result.idleSeconds, result.pssPerAppMiB))
    say(row(result.lastTenth, against: result.firstTenth))
    say(String(format: "  host CPU per launch and suspension: first tenth %.2f ms, last tenth %.2f ms",
               result.hostCpuFirstTenthMs, result.hostCpuLastTenthMs))
}

func reportNamespaceCost() {
    if let namespaces = benchmarkNamespaceCost(bundle: bundle, executable: executable, runs: runs) {
        say(row(namespaces.namespaced, against: namespaces.flat))
    } else {
        say("namespace cost: this machine gives apps no PID and mount namespaces (see apphost doctor)")
    }
}
// `--callbacks-only N`: N callback round trips of one Hello, median and p99 (for profiling).
if let count = options.callbacksOnly {
    let (supervisor, log, state) = benchmarkHost("callbacks", bundle: bundle, executable: executable)
    var cursor = 0
    try! supervisor.launch(bundle.name, kind: .foreground)
    let active = log.next("didBecomeActive", after: &cursor)
    say("app pid \(active.event.pid!), host pid \(getpid())")
    var callbacks: [Double] = []
    for _ in 0..<count {
        try! supervisor.memoryWarning(bundle.name)
        callbacks.append(log.next("didReceiveMemoryWarning", after: &cursor).event.elapsed!.seconds * 1000)
    }
    say(row(Sample(label: "delegate callback round trip", values: callbacks), against: nil))
    try! supervisor.terminate(bundle.name)
    _ = log.next("terminated", after: &cursor)
    try? FileManager.default.removeItem(at: state)
    exit(0)
}
/// bwrap running /bin/true in new namespaces: the confined launch's baseline.
let bwrapOptions = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--new-session", "/bin/true"]
// `--launch-only`: launches of one Hello and bwrap's /bin/true, taken in turn so that drift on
// a shared machine falls on both alike (for profiling the launch).
if options.launchOnly {
    let (supervisor, log, state) = benchmarkHost("launch", launcher: Launcher(rawValue: options.launcher), bundle: bundle, executable: executable)
    var cursor = 0
    var launches: [Double] = []
    var bwraps: [Double] = []
    for _ in 0...runs {
        let start = now()
        try! supervisor.launch(bundle.name, kind: .foreground)
        launches.append(Double(log.next("didBecomeActive", after: &cursor).at - start) / 1e6)
        try! supervisor.terminate(bundle.name)
        _ = log.next("terminated", after: &cursor)
        if let baseline = run("/usr/bin/bwrap", bwrapOptions) { bwraps.append(baseline.milliseconds) }
        waitForWarmStandby(supervisor)
    }
    let launch = Sample(label: "launch to applicationDidBecomeActive acknowledged", values: Array(launches.dropFirst()))
    say(row(launch, against: bwraps.count > 1 ? Sample(label: "bwrap: new namespaces, /bin/true", values: Array(bwraps.dropFirst())) : nil))
    try? FileManager.default.removeItem(at: state)
    exit(0)
}
// `--scale-only N`: just the scale run of N apps (and its JSON with --json).
if let count = options.scaleOnly {
    reportScale(apps: count)
    figures.write()
    exit(0)
}
// `--namespaces-only`: just what the namespaces cost a launch.
if options.namespacesOnly {
    reportNamespaceCost()
    exit(0)
}

say("apphost benchmark: \(runs) runs per figure (callbacks: \(runs * 4)); milliseconds, median and p99; ratio of medians")
let spawn = measure("spawn of /bin/true", runs: runs) { spawnTrue() }
let (rawStop, rawContinue) = rawStopContinue(runs: runs)
let pipeTrip = pipeRoundTrips(runs: runs * 4)
let codec = measure("compact coding of one callback and its ack (4 steps)", runs: runs * 4) {
    let start = now()
    for _ in 0..<100 {
        let request = HostMessage.callback(WireCallbackRequest(id: 7, callback: .didReceiveMemoryWarning, state: .active))
        _ = try! WireCoding.decode(HostMessage.self, from: WireCoding.encode(request))
        let ack = AppMessage.ack(id: 7, returned: nil, snapshot: nil)
        _ = try! WireCoding.decode(AppMessage.self, from: WireCoding.encode(ack))
    }
    return Double(now() - start) / 1e8
}
let jsonCodec = measure("the same in JSON", runs: runs * 4) {
    let start = now()
    for _ in 0..<100 {
        let request = HostMessage.callback(WireCallbackRequest(id: 7, callback: .didReceiveMemoryWarning, state: .active))
        _ = try! WireCoding.decode(json: HostMessage.self, from: WireCoding.encode(json: request))
        let ack = AppMessage.ack(id: 7, returned: nil, snapshot: nil)
        _ = try! WireCoding.decode(json: AppMessage.self, from: WireCoding.encode(json: ack))
    }
    return Double(now() - start) / 1e8
}
figures.record("spawnTrue", spawn)
say("what".padding(toLength: 64, withPad: " ", startingAt: 0) + "  median     p99   baseline")
// Nanoseconds per getppid, reported in the milliseconds columns' place as ns.
let selfPath = URL(fileURLWithPath: CommandLine.arguments[0]).path
// Interleaved, so that drift on a shared machine falls on both sides alike.
func loopNanoseconds(_ mode: String) -> Double {
    Double(run(selfPath, ["--syscall-loop", mode, "1000000"])!.output.trimmingCharacters(in: .whitespacesAndNewlines))!
}
var confinedCalls: [Double] = []
var unconfinedCalls: [Double] = []
for _ in 0..<21 {
    confinedCalls.append(loopNanoseconds("confined"))
    unconfinedCalls.append(loopNanoseconds("unconfined"))
}
let confinedLoop = Sample(label: "getppid under the app's seccomp filter (ns per call)", values: confinedCalls)
let unconfinedLoop = Sample(label: "getppid unconfined (ns per call)", values: unconfinedCalls)
say(row(confinedLoop, against: unconfinedLoop))
var mechanisms: [SuspensionMechanism] = [.sigstop]
if DoctorReport.probe(instance: "benchmark").findings.contains(where: { $0.name == "cgroup v2 freezer" && $0.available }) {
    mechanisms.insert(.cgroupFreezer, at: 0)
}
let hasBwrap = run("/usr/bin/bwrap", bwrapOptions) != nil
for (index, mechanism) in mechanisms.enumerated() {
    // bwrap, the launch's baseline, is taken in turn with the default launcher's launches.
    let result = benchmarkApphost(
        mechanism: mechanism, bundle: bundle, executable: executable, runs: runs,
        interleaving: index == 0 && hasBwrap ? { run("/usr/bin/bwrap", bwrapOptions)?.milliseconds } : nil)
    if index == 0 {
        // The default launcher (standbys exec'd ahead), then the template's forks and the exec
        // launcher (Supervisor.Configuration.launcher).
        let template = benchmarkApphost(mechanism: mechanism, launcher: .template, bundle: bundle, executable: executable, runs: runs)
        let templateLaunch = Sample(label: "launch with the template launcher", values: template.launch.values)
        let exec = benchmarkApphost(mechanism: mechanism, launcher: .exec, bundle: bundle, executable: executable, runs: runs)
        let execLaunch = Sample(label: "launch with the exec launcher", values: exec.launch.values)
        figures.record("launch", result.launch)
        figures.record("launchTemplate", templateLaunch)
        figures.record("launchExec", execLaunch)
        figures.record("emptyPlugin", result.loaded)
        figures.record("callback", result.callback)
        figures.record("suspend", result.suspend)
        figures.record("resume", result.resume)
        say(row(result.launch, against: spawn))
        say(row(result.launch, against: result.loaded))
        say(row(result.launch, against: templateLaunch))
        say(row(result.launch, against: execLaunch))
        say(row(result.confinement, against: result.launch))
        for (key, label, command, options) in [
            ("bwrap", "bwrap: new namespaces, /bin/true", "/usr/bin/bwrap", bwrapOptions),
            ("firejail", "firejail: seccomp, no caps, /bin/true", "/usr/bin/firejail", ["--quiet", "--noprofile", "--seccomp", "--caps.drop=all", "--nonewprivs", "--noroot", "/bin/true"]),
        ] {
            guard run(command, options) != nil else {
                say("\(label): \(command) is missing or fails here; scripts/benchmark installs it")
                continue
            }
            let baseline = key == "bwrap" && result.interleaved.count > 1
                ? Sample(label: label, values: result.interleaved)
                : measure(label, runs: runs) { run(command, options)!.milliseconds }
            figures.record(key, baseline)
            say(row(result.launch, against: baseline))
        }
        say(row(result.callback, against: pipeTrip))
        say(row(codec, against: jsonCodec))
    }
    say(row(result.suspend, against: rawStop))
    say(row(result.resume, against: rawContinue))
}
reportNamespaceCost()
if let storage = benchmarkStorage(executable: executable, bundle: bundle, runs: max(10, runs / 2)) {
    say(row(storage.make, against: nil))
    say(row(storage.mount, against: nil))
    say(row(storage.first, against: storage.firstBaseline))
    say(row(storage.later, against: storage.laterBaseline))
} else {
    say("storage: disk images are not available here (see apphost doctor)")
}
let probe = URL(fileURLWithPath: bundlePath).deletingLastPathComponent().appendingPathComponent("Probe.app")
if FileManager.default.fileExists(atPath: probe.appendingPathComponent("Info.plist").path) {
    let locks = benchmarkSharedResourceCheck(executable: executable, probe: probe, runs: runs)
    figures.record("deadlockCheck1000", locks.check)
    say(row(locks.check, against: locks.checkBaseline))
    say(row(locks.suspend, against: locks.suspendBaseline))
    let status = benchmarkStatusUnderFlood(executable: executable, probe: probe, runs: runs)
    say(row(status.flood, against: status.idle))
    if let note = status.note { say(note) }
} else {
    say("0xdead10cc check and ps under an output flood: \(probe.path) is missing; scripts/benchmark bundles it")
}
if let scale = options.scale { reportScale(apps: scale) }
figures.write()
