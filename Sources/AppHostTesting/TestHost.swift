#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import Synchronization
@_exported public import AppHostRuntime
import AppHostSystem

/// A real apphost host for one test: `apphost launch --json` on a private state directory, with
/// the test's bundles and policy, driven with the host's own commands.
///
///     let host = try await TestHost.launch([notesBundle], policy: Policy { $0.backgroundTime = .seconds(2) })
///     try await host.home()
///     try await host.wait("Notes", .suspended)
///     #expect(try host.report("Notes") == nil)
///     await host.shutdown()
///
/// The host is the `apphost` binary (see `Options.executable` for where it is found), so app
/// code never runs in the test process: each app runs confined in its own process, as in
/// production, with the same budgets, suspension, events and termination reports. Events are
/// `HostEvent`s and reports `TerminationReport`s, the types `--json` and `apphost reports` use.
///
/// Teardown: `shutdown()` quits the host as `quit` does (sequence 7). A host still running when
/// its `TestHost` is released is killed then, and its private directory removed. If the test
/// process itself dies — a crash, a SIGKILL — the host sees its standard input end, which it
/// takes as `quit`, and ends its apps and itself: no process outlives the test. `withTestHost`
/// scopes a host to a closure and always shuts it down.
public final class TestHost: Sendable {
    /// How to start the host.
    public struct Options: Sendable {
        /// The apphost binary. When nil: `$APPHOST_EXECUTABLE`, else the `apphost` on the PATH
        /// (installed by `scripts/install`); nothing is built (in apphost's own package, the
        /// `apphost` built beside its tests). `apphost-init` must be beside the file, and
        /// `apphost-app` should be (without it app processes run apphost itself, more slowly);
        /// `scripts/install` puts both there, as `swift build` does in a checkout.
        public var executable: URL?
        /// Launch the first app directly into the background (`--background`).
        public var background: Bool
        /// More `apphost launch` options, e.g. `["--suspension", "sigstop"]` or `["--power", "battery"]`.
        public var arguments: [String]
        /// Added to the host's environment (which is otherwise the test process's).
        public var environment: [String: String]
        /// How long the host may take to start and begin launching the first app.
        public var startTimeout: Duration
        /// Keep the private directory (state, reports, containers) after the host is released,
        /// to look at it after a failure; its path is `directory`.
        public var keepsDirectory: Bool

        /// The defaults: the binary found as `executable` says, the first app to the foreground,
        /// 30 s to start, the private directory removed with the host.
        public init(
            executable: URL? = nil, background: Bool = false, arguments: [String] = [], environment: [String: String] = [:],
            startTimeout: Duration = .seconds(30), keepsDirectory: Bool = false
        ) {
            self.executable = executable
            self.background = background
            self.arguments = arguments
            self.environment = environment
            self.startTimeout = startTimeout
            self.keepsDirectory = keepsDirectory
        }
    }

    /// The apphost binary running this host.
    public let executable: URL
    /// The host's pid.
    public var pid: Int32 { process.pid }
    /// This host's private directory: the state directory, the policy file, copies of bundles.
    public let directory: URL
    /// The host's state directory (`--state-dir`): reports, containers, the control socket.
    public var stateDirectory: URL { directory.appendingPathComponent("state", isDirectory: true) }
    /// The policy the host runs with.
    public let policy: Policy

    private let process: HostProcess
    private let log: EventLog
    private let keepsDirectory: Bool
    /// Where `nextEvent` reads on from.
    private let cursor = Mutex(0)

    private init(executable: URL, directory: URL, policy: Policy, process: HostProcess, log: EventLog, keepsDirectory: Bool) {
        self.executable = executable
        self.directory = directory
        self.policy = policy
        self.process = process
        self.log = log
        self.keepsDirectory = keepsDirectory
    }

    /// Starts a host with `bundles` (`Name.app` directories; the first is launched, the others
    /// installed) and `policy`, and returns once it is reachable and launching the first app.
    /// Throws if the host cannot start: the binary is missing, or the host refused its input
    /// (a malformed bundle, a first app that cannot launch), with what it said.
    public static func launch(_ bundles: [URL], policy: Policy = Policy(), options: Options = Options()) async throws -> TestHost {
        guard !bundles.isEmpty else { throw TestHostError("name at least one bundle to launch", code: .setupFailed) }
        do { try policy.validate() } catch {
            throw TestHostError("the policy cannot be used: \(error)", code: .setupFailed)
        }
        let executable = try Executable.locate(options.executable)
        let directory = try PrivateDirectory.make()
        let log = EventLog()
        let process: HostProcess
        do {
            let policyFile = directory.appendingPathComponent("policy.json")
            try policy.fileContents().write(to: policyFile)
            let paths = try bundles.map { try PrivateDirectory.reachable($0, in: directory).path }
            var arguments = ["launch", "--json", "--state-dir", directory.appendingPathComponent("state").path, "--policy", policyFile.path]
            if options.background { arguments.append("--background") }
            arguments += options.arguments + ["--"] + paths
            let environment = ProcessInfo.processInfo.environment.merging(options.environment) { $1 }
            process = try HostProcess(
                executable: executable.path, arguments: arguments, environment: environment,
                output: directory.appendingPathComponent("host-output.jsonl"), errors: directory.appendingPathComponent("host-errors.log"), log: log)
        } catch {
            PrivateDirectory.remove(directory)
            if let error = error as? TestHostError { throw error }
            throw TestHostError("cannot prepare the host in \(directory.path): \(error)", code: .setupFailed)
        }
        let host = TestHost(
            executable: executable, directory: directory, policy: policy, process: process, log: log, keepsDirectory: options.keepsDirectory)
        try await host.waitUntilReachable(timeout: options.startTimeout)
        return host
    }

    /// The host begins launching its first app only once its control socket listens: its first
    /// event of an app says it is ready for commands.
    private func waitUntilReachable(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if log.first(from: 0, where: { $0.app != nil }) != nil { return }
            if let exit = log.exit {
                let said = log.standardError.split(separator: "\n").suffix(10).joined(separator: "\n")
                throw TestHostError(
                    "the host \(exit) before it was ready\(said.isEmpty ? "" : ": \(said)")", code: .launchFailed, lastEvents: log.last(20))
            }
            if ContinuousClock.now >= deadline {
                process.send(SIGKILL)
                throw TestHostError(
                    "the host did not begin launching its first app within \(timeout); it was killed. Standard error:\n\(log.standardError)",
                    code: .timeout, lastEvents: log.last(20))
            }
            await log.waitForMore(than: log.count, until: deadline)
        }
    }

    deinit {
        if log.exit == nil {
            writeStandardError("AppHostTesting: the host \(process.pid) still ran when its TestHost was released; killing it (call shutdown() to end it as quit does)\n")
            process.closeLifeline()
            process.send(SIGKILL)
            _ = process.waitForEnd(timeout: .seconds(30))
        }
        if !keepsDirectory { PrivateDirectory.remove(directory) }
    }

    // MARK: Commands

    /// Runs one line of the command language (docs/commands.md, "Running apps") as `apphost ctl`
    /// does, and returns what it printed on standard output — JSON lines for `ps` and `tasks`.
    /// Like a `--script` line, the command first waits for the apps it concerns to settle.
    /// Throws `commandFailed` with what the host said if the command failed, `hostExited` if
    /// the host is gone.
    @discardableResult
    public func send(_ command: String) async throws -> [String] {
        let answer = try await run(command)
        guard answer.status == 0 else {
            let said = answer.errors.isEmpty ? "(the host said nothing)" : answer.errors.joined(separator: "; ")
            throw TestHostError("\(command) failed: \(said)", code: .commandFailed, lastEvents: log.last(20))
        }
        return answer.output
    }

    /// Sends `command` and collects the answer: its status, and its lines of standard output
    /// and error (without the `apphost: ctl: ` the host puts before a failure).
    private func run(_ command: String) async throws -> (status: Int32, output: [String], errors: [String]) {
        if let exit = log.exit {
            throw TestHostError("cannot send \(command): the host \(exit)\(standardErrorTail)", code: .hostExited, lastEvents: log.last(20))
        }
        let paths = ControlPaths(stateDirectory: stateDirectory)
        let answer = Mutex<(output: [String], errors: [String])>(([], []))
        // A command can take long (settling, `wait`): a thread of its own, not a cooperative one.
        let status: Result<Int32, SupervisorError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(SupervisorError) -> Int32 in
                    try ControlClient.send(
                        .run(command), to: paths, output: { line in answer.withLock { $0.output.append(line) } },
                        error: { line in answer.withLock { $0.errors.append(line) } })
                })
            }
        }
        let (output, errors) = answer.withLock { $0 }
        switch status {
        case .success(let status):
            return (status, output, errors.map { line in
                var line = Substring(line)
                for prefix in ["apphost: ", "ctl: "] where line.hasPrefix(prefix) { line = line.dropFirst(prefix.count) }
                return String(line)
            })
        case .failure(let error):
            if await process.ended(within: .seconds(1)), let exit = log.exit {
                throw TestHostError("cannot send \(command): the host \(exit)\(standardErrorTail)", code: .hostExited, lastEvents: log.last(20))
            }
            throw TestHostError("cannot send \(command): \(error)", code: .commandFailed, lastEvents: log.last(20))
        }
    }

    private var standardErrorTail: String {
        let lines = log.standardError.split(separator: "\n").suffix(5)
        return lines.isEmpty ? "" : "; its last words: " + lines.joined(separator: " ⏎ ")
    }

    // MARK: States and events

    /// Waits until `app` (its CFBundleName or bundle identifier) is in `state` — `inactive`,
    /// `active`, `background`, `suspended` or `terminated` — as the host's `wait` command does.
    /// Throws `timeout` naming the state the app is in and its last events if it is not there
    /// within `timeout`.
    public func wait(_ app: String, _ state: AppState, timeout: Duration = .seconds(30)) async throws {
        let answer = try await run("wait \(app) \(state.rawValue) \(timeout.seconds)")
        guard answer.status == 0 else {
            let said = answer.errors.joined(separator: "; ")
            // "Notes did not reach suspended within 2.0 s (it is background)"; anything else is a
            // refusal, such as an unknown app.
            let timedOut = said.contains("did not reach")
            throw TestHostError(
                timedOut ? said : "wait \(app) \(state.rawValue) failed: \(said)", code: timedOut ? .timeout : .commandFailed,
                lastEvents: log.last(20, of: timedOut ? app : nil))
        }
    }

    /// The next event that satisfies `predicate`, reading the host's events in order from
    /// where the last `nextEvent` stopped (from its start, the first time), like a stream: the
    /// event returned and those before it are not read again, so an event that came before
    /// the call is found. Throws `timeout`, describing what was awaited with `description` and
    /// the last events, if none comes within `timeout`; `hostExited` if the host ends first.
    public func nextEvent(
        _ description: String = "an event that matches", timeout: Duration = .seconds(30),
        where predicate: @Sendable (HostEvent) -> Bool
    ) async throws -> HostEvent {
        let deadline = ContinuousClock.now + timeout
        while true {
            let start = cursor.withLock { $0 }
            let seen = log.count
            if let (index, event) = log.first(from: start, where: predicate) {
                cursor.withLock { $0 = max($0, index + 1) }
                return event
            }
            if let exit = log.exit {
                throw TestHostError("the host \(exit) before \(description)", code: .hostExited, lastEvents: log.last(20))
            }
            if ContinuousClock.now >= deadline {
                throw TestHostError("waited \(timeout) for \(description)", code: .timeout, lastEvents: log.last(20))
            }
            await log.waitForMore(than: seen, until: deadline)
        }
    }

    /// The next event named `name` (of `app`, by CFBundleName or identifier, if given), as
    /// `nextEvent(_:timeout:where:)` reads them.
    @discardableResult
    public func nextEvent(_ name: EventName, of app: String? = nil, timeout: Duration = .seconds(30)) async throws -> HostEvent {
        try await nextEvent("\(app.map { "\($0)'s " } ?? "")\(name) event", timeout: timeout) { event in
            event.event == name && (app.map { event.concerns($0) } ?? true)
        }
    }

    /// The host's events from its start, in order; ends when the host exits.
    public var events: Events { Events(log: log) }

    /// Every event so far, in order.
    public var recordedEvents: [HostEvent] { log.events }

    /// The last 64 KiB of the host's standard error: its messages and its apps' output, each
    /// line prefixed with `Name[pid]: `.
    public var standardError: String { log.standardError }

    /// How the host ended; nil while it runs.
    public var exit: HostExit? { log.exit }

    // MARK: Teardown

    /// Quits the host as `quit` does (sequence 7): running apps get
    /// `applicationWillTerminate`, suspended ones are ended, each with its report, and the host
    /// exits. If it has not within `timeout` (by default the policy's launch and willTerminate
    /// budgets and 10 s), it is asked again with SIGTERM twice (the second ends its apps at
    /// once), then killed; each step is written on standard error. Returns how it ended.
    /// The private directory stays, with its reports, until this `TestHost` is released.
    @discardableResult
    public func shutdown(timeout: Duration? = nil) async -> HostExit {
        let steps: [ShutdownStep] = [
            .closeInput(allowed: timeout ?? policy.launchTimeout + policy.willTerminateTimeout + .seconds(10)),
            .signal(SIGTERM, allowed: .milliseconds(100)),
            .signal(SIGTERM, allowed: .seconds(5)),
            .signal(SIGKILL, allowed: .seconds(30)),
        ]
        for step in steps {
            if let exit = log.exit { return exit }
            switch step {
            case .closeInput(let allowed):
                process.closeLifeline()
                if await process.ended(within: allowed) { continue }
                writeStandardError("AppHostTesting: the host \(pid) did not quit within \(allowed) of its input's end; sending SIGTERM\n")
            case .signal(let signal, let allowed):
                process.send(signal)
                _ = await process.ended(within: allowed)
            }
        }
        return log.exit ?? HostExit(status: nil, signal: SIGKILL)
    }

    /// Kills the host at once with SIGKILL, as a crash would end it: its apps die with it, with
    /// no callback and no report. Returns once it has ended.
    @discardableResult
    public func kill() async -> HostExit {
        process.send(SIGKILL)
        _ = await process.ended(within: .seconds(30))
        return log.exit ?? HostExit(status: nil, signal: SIGKILL)
    }

    /// One step of `shutdown`: what to do, and how long to give the host after it.
    private enum ShutdownStep {
        case closeInput(allowed: Duration)
        case signal(Int32, allowed: Duration)
    }
}

extension TestHost {
    /// `Name.app` in `directory`, by default the `.build/apps` of the package under test, where
    /// `swift package apphost-test` puts its bundles before it runs the tests (found above the
    /// test binary's build directory). Throws, naming the command that makes it, if it is not
    /// there, or if it is older than the library or the sources it was made from (stale: the
    /// test would run last build's app).
    public static func bundle(_ name: String, in directory: URL? = nil) throws -> URL {
        let apps: URL
        if let directory {
            apps = directory
        } else {
            guard let package = PackageUnderTest.directory else {
                throw TestHostError(
                    "cannot tell the package of the test binary \(PackageUnderTest.testBinary.path) (it is not under a .build directory); pass the bundles' directory",
                    code: .setupFailed)
            }
            apps = package.appendingPathComponent(".build/apps")
        }
        let bundle = apps.appendingPathComponent(name.hasSuffix(".app") ? name : "\(name).app", isDirectory: true)
        guard FileManager.default.fileExists(atPath: bundle.appendingPathComponent("Info.plist").path) else {
            throw TestHostError(
                "\(bundle.path) is missing: run \(PackageUnderTest.command) in the app's package, which bundles its apps into "
                    + "\(apps.path) and runs its tests (or bundle them with swift package bundle-app --all --output \(apps.path))",
                code: .setupFailed)
        }
        if let stale = PackageUnderTest.staleness(of: bundle) { throw TestHostError(stale, code: .staleBundle) }
        return bundle
    }
}

/// Starts a host, runs `body` with it, and shuts it down, whether `body` returns or throws.
///
///     try await withTestHost([notes], policy: Policy { $0.backgroundTime = .seconds(2) }) { host in
///         try await host.home()
///         try await host.wait("Notes", .suspended)
///     }
public func withTestHost<Result>(
    _ bundles: [URL], policy: Policy = Policy(), options: TestHost.Options = TestHost.Options(),
    _ body: (TestHost) async throws -> Result
) async throws -> Result {
    let host = try await TestHost.launch(bundles, policy: policy, options: options)
    do {
        let result = try await body(host)
        await host.shutdown()
        return result
    } catch {
        await host.shutdown()
        throw error
    }
}

extension Policy {
    /// The default policy with `changes` made: `Policy { $0.backgroundTime = .seconds(2) }`.
    public init(_ changes: (inout Policy) -> Void) {
        self.init()
        changes(&self)
    }
}
