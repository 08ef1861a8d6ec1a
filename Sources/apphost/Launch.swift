import ArgumentParser
import AppHostRuntime
import AppHostTransfers
import Foundation
import Logging
import Synchronization

struct Launch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a host with the given app bundles; the first comes to the foreground.",
        discussion: """
            Prints one line per life-cycle event (--json: JSON lines). Reads commands from --script FILE \
            and then from standard input, one per line:
              home | open APP [--new-scene] | interrupt APP [SECONDS] | switcher | wake APP
              terminate APP | memory-warning [APP] | scenes [--json]
              close-scene APP SCENE | discard-scene APP SCENE
              memory-pressure [MIB] | storage-pressure | fetch APP | run-task APP IDENTIFIER | expire APP [IDENTIFIER]
              push APP FILE.json | voip-push APP FILE.json | audio-interrupt APP | audio-resume APP
              location set LAT,LON | location route FILE.gpx [--speed M/S] | location clear
              authorize APP location always|whenInUse|denied
              power plugged|battery | network online|offline | advance SECONDS | tasks | transfers
              advance reset | sleep SECONDS | wait APP STATE [TIMEOUT] | ps | help | quit
            APP is a bundle's CFBundleName or identifier; STATE is inactive, active, background, suspended \
            or terminated. A command first waits (at most the launch timeout) for the apps it concerns to \
            finish a launch, suspension or other transition under way. tasks shows the scheduler's clock, \
            which advance moves on (kept across hosts) and advance reset puts back on real time. If the \
            first app is already running (launched into the background for a fetch, a task or a push), \
            it is opened. End of input, quit, Ctrl-C, SIGTERM or a reader of standard output that goes away \
            terminate the apps (applicationWillTerminate for running ones) and exit.

            Exit status: 0 when no app was ended by the system; 1 for bad input (a bundle, policy or \
            --script line that cannot be used, an app that cannot launch); otherwise the first system \
            end decides: 2 crash (SIGNAL, EXIT), 3 watchdog, 4 background rules (RUNNINGBOARD), 5 sandbox, \
            6 jetsam, 7 resource (EXC_RESOURCE), 8 host rules (HOST).
            """)

    @OptionGroup var state: StateOptions

    @Flag(help: "Print events as JSON lines: time, app, name, pid, event, state, and code, reason and report for terminations.")
    var json = false

    @Option(help: ArgumentHelp("Run the commands in this file before reading standard input.", valueName: "file"))
    var script: String?

    @Option(help: ArgumentHelp("Write the run as Trace Event JSON (Perfetto, chrome://tracing): apps as tracks; states, callbacks, background tasks, suspensions and kills.", valueName: "file"))
    var trace: String?

    @Option(help: "The least level of log records shown: the apps' swift-log records (log events) and the host's own diagnostics (trace, debug: each launch, callback, freeze, kill and report). One of trace, debug, info, notice, warning, error, critical.", transform: LogLevel.parse)
    var logLevel: LogLevel = .info

    @Flag(help: "Launch the first app directly into the background (sequence 5) instead of the foreground.")
    var background = false

    @Option(help: ArgumentHelp("A JSON policy file of budgets (see README.md, Policy); flags override it.", valueName: "file"))
    var policy: String?

    @OptionGroup(title: "Policy knobs") var knobs: PolicyOptions

    @Option(help: "The simulated power source at start: plugged or battery (the power command changes it).")
    var power: PowerChoice = .plugged
    @Option(help: "The simulated network at start: online or offline (the network command changes it).")
    var network: NetworkChoice = .online
    @Option(name: .customLong("allow-transfers-to"), help: ArgumentHelp("Let background transfers connect to this local address (loopback, link-local and private addresses are refused otherwise: the host would reach them for an app that cannot), e.g. 127.0.0.1 or 127.0.0.1:8080; repeat for more.", valueName: "address[:port]"))
    var allowTransfersTo: [String] = []
    @Flag(help: "Turn background app refresh off: no fetch or refresh task runs, and BGTaskScheduler.submit throws unavailable.")
    var noBackgroundAppRefresh = false

    @Option(help: "How to start app processes: standby (each exec'd ahead of its launch, its own address-space layout; a launch that finds none is exec'd), template (forked from a process that has loaded the Swift runtime and Foundation once; apps share its address-space layout) or exec (each exec'd at its launch, about 10 ms slower). Default: $APPHOST_LAUNCHER, else standby.")
    var launcher: LauncherChoice = LauncherChoice(rawValue: ProcessInfo.processInfo.environment["APPHOST_LAUNCHER"] ?? "") ?? .standby
    @Flag(help: "Run apps without PID and mount namespaces of their own, as on a machine that has none: Landlock, seccomp, capabilities, per-app users and cgroups still confine them, but an app sees the host's processes and file system through them.")
    var noNamespaces = false
    @Option(help: "How to suspend apps: auto (cgroup v2 freezer where possible, else SIGSTOP), cgroup, or sigstop.")
    var suspension: SuspensionChoice = .auto
    @Option(help: "How to hold apps to their memory limits: auto (the cgroup v1 memory controller where possible, else sampling), cgroup, or sampling.")
    var memoryEnforcement: MemoryEnforcementChoice = .auto

    @Option(help: "How to hold containers to their storage limits: auto (project quotas where the state directory's file system has them, else a disk image per container, else accounting only), project-quota, disk-image, or accounting.")
    var storage: StorageChoice = .auto

    @Argument(help: ArgumentHelp("App bundles (Name.app directories).", valueName: "bundle"))
    var bundles: [String]

    func validate() throws {
        guard !bundles.isEmpty else { throw ValidationError("name at least one app bundle, e.g. apphost launch Notes.app") }
    }

    func run() async throws {
        await execute()
    }

    /// The host's whole life; ends the process.
    func execute() async -> Never {
        HostLogHandler.bootstrap(level: logLevel)
        let policy = resolvedPolicy()
        let appBundles = bundles.map { path in
            do { return try AppBundle(url: URL(fileURLWithPath: path)) } catch { fail("\(error)") }
        }
        var configuration = Supervisor.Configuration(
            stateDirectory: state.stateDirectory, executable: Self.executablePath())
        configuration.policy = policy
        configuration.instance = state.instance
        configuration.suspension = suspension.mechanism
        configuration.launcher = launcher.launcher
        configuration.memoryEnforcement = memoryEnforcement.enforcement
        configuration.power = PowerState(rawValue: power.rawValue) ?? .plugged
        configuration.network = NetworkState(rawValue: network.rawValue) ?? .online
        do {
            configuration.transferRunner = TransferService(destinations: try TransferDestinations(parsing: allowTransfersTo))
        } catch {
            fail("--allow-transfers-to \(error)")
        }
        configuration.backgroundAppRefresh = !noBackgroundAppRefresh
        configuration.namespaces = !noNamespaces
        configuration.storageMechanism = storage.mechanism
        configuration.appLogLevel = logLevel

        // A reader of the events that goes away (`apphost launch | head`) ends the host as
        // SIGTERM does, apps terminated and reported, instead of killing it mid-write.
        signal(SIGPIPE, SIG_IGN)
        let printer = EventPrinter(json: json) { kill(getpid(), SIGTERM) }
        let firstLaunch = FirstLaunch(identifier: appBundles[0].identifier, label: appBundles[0].url.lastPathComponent)
        let outcome = LaunchOutcome()
        let recording = RunRecording(stateDirectory: state.stateDirectory, tracePath: trace)
        let control = HostControl()
        let supervisor: Supervisor
        do {
            supervisor = try Supervisor(configuration: configuration) { event in
                printer.print(event)
                firstLaunch.observe(event)
                outcome.observe(event)
                recording.record(event)
                control.publish(event)
            }
            for bundle in appBundles { try supervisor.install(bundle) }
            firstLaunch.beforeExit = {
                supervisor.releaseStorage()
                recording.finish()
            }
        } catch {
            fail("\(error)")
        }
        Self.handleSignals(supervisor, control: control) {
            recording.finish()
            return outcome.exitStatus(requested: 0)
        }
        if let warning = control.start(supervisor: supervisor, json: json, quit: {
            Task { await finish(supervisor, status: 0) }
        }) {
            printer.error(warning)
        }
        do {
            try supervisor.launch(appBundles[0].identifier, kind: background ? .background : .foreground)
        } catch {
            fail("\(error)")
        }

        let session = CommandSession(supervisor: supervisor, printer: printer)
        if let script {
            guard let text = try? String(contentsOfFile: script, encoding: .utf8) else { fail("cannot read the script \(script)") }
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                switch await session.execute(String(line), origin: "\(script):\(index + 1)") {
                case .next: continue
                case .quit: await finish(supervisor, status: 0)
                case .failed: await finish(supervisor, status: 1)
                }
            }
        }
        if isatty(STDIN_FILENO) != 0 {
            printer.error("commands are read here, one a line: help lists them, quit ends the host")
        }
        for await line in Self.standardInputLines() {
            if case .quit = await session.execute(line, origin: "stdin") { break }
        }
        await finish(supervisor, status: 0)

        @Sendable func finish(_ supervisor: Supervisor, status: Int32) async -> Never {
            // Quitting right away (say, with standard input at its end) must still report a
            // first app that cannot launch: wait until its launch has gone one way or the other.
            await firstLaunch.decided()
            await supervisor.shutdown()
            control.close()
            recording.finish()
            OutputQueue.standardOutput.drain()
            Foundation.exit(outcome.exitStatus(requested: status))
        }
    }

    /// The defaults, then the --policy file over them, then the flags over that.
    private func resolvedPolicy() -> Policy {
        do {
            var policy = Policy()
            if let file = self.policy { policy = try Policy.load(contentsOf: URL(fileURLWithPath: file)) }
            return try policy.applying(commandLine: knobs.values)
        } catch {
            fail(error.description)
        }
    }

    /// This binary, re-executed as each app process.
    static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Ctrl-C or SIGTERM: terminate the apps as sequence 7 says, then exit. A second one kills them at once.
    /// `ended` runs once the apps are gone and returns the exit status.
    static func handleSignals(_ supervisor: Supervisor, control: HostControl, ended: @escaping @Sendable () -> Int32) {
        let count = Mutex(0)
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                let seen = count.withLock { count -> Int in
                    count += 1
                    return count
                }
                if seen == 1 {
                    Logger(label: "apphost").notice("terminating the apps (again to kill them at once)")
                    Task {
                        await supervisor.shutdown()
                        control.close()
                        let status = ended()
                        OutputQueue.standardOutput.drain()
                        Foundation.exit(status)
                    }
                } else {
                    supervisor.killAll()
                }
            }
            source.resume()
            signalSources.append(source)
        }
    }

    /// Lines of standard input, read on a thread of their own; finishes at end of input.
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}

/// Keeps the signal sources alive for the life of the process; set up once, before any command runs.
nonisolated(unsafe) private var signalSources: [any DispatchSourceSignal] = []

enum MemoryEnforcementChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, cgroup, sampling

    var enforcement: MemoryEnforcement? {
        switch self {
        case .auto: nil
        case .cgroup: .cgroup
        case .sampling: .sampling
        }
    }
}

/// `--storage`: StorageMechanism's values, or auto.
enum StorageChoice: String, ExpressibleByArgument, CaseIterable {
    case auto
    case projectQuota = "project-quota"
    case diskImage = "disk-image"
    case accounting

    var mechanism: StorageMechanism? { StorageMechanism(rawValue: rawValue) }
}

/// `--power`: PowerState's values.
enum PowerChoice: String, ExpressibleByArgument, CaseIterable {
    case plugged
    case battery
}

/// `--network`: NetworkState's values.
enum NetworkChoice: String, ExpressibleByArgument, CaseIterable {
    case online
    case offline
}

/// `--launcher`: Launcher's values.
enum LauncherChoice: String, ExpressibleByArgument, CaseIterable {
    case standby, template, exec

    var launcher: Launcher {
        switch self {
        case .standby: .standby
        case .template: .template
        case .exec: .exec
        }
    }
}

enum SuspensionChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, cgroup, sigstop

    var mechanism: SuspensionMechanism? {
        switch self {
        case .auto: nil
        case .cgroup: .cgroupFreezer
        case .sigstop: .sigstop
        }
    }
}
