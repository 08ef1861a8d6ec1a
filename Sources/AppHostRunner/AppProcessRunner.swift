#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims
import CAppHostCrash

/// The app process before any app code runs: it is apphost's own binary re-executed in an internal
/// mode, with the control socket on fd 3. It greets the supervisor, receives its configuration,
/// confines itself, loads the plugin, checks its ABI record and calls its
/// entry point, which never returns. Confinement (AppHostSandbox) happens between receiving the
/// configuration and loading the plugin.
public enum AppProcessRunner {
    /// The internal argument that selects this mode: `apphost __app-process`.
    public static let argument = appProcessArgument
    /// The control socket's descriptor in the app process.
    public static let controlFD: Int32 = 3
    /// The diagnostics socket: backtraces to the host (APPHOST_CRASH_FD).
    public static let diagnosticsFD: Int32 = APPHOST_CRASH_FD
    /// Environment variable naming the supervisor's pid, to detect a parent that died before
    /// the parent-death signal was armed.
    public static let parentPIDVariable = "APPHOST_PARENT_PID"
    /// The thread name of an app process made ahead of its launch, until it is configured.
    public static let standbyThreadName = "apphost-standby"

    public static func main() -> Never {
        // The supervisor spawns from a thread that lives as long as it does, so this signal
        // fires exactly when the host goes away, however it goes (SIGKILL included).
        _ = apphost_set_parent_death_signal(SIGKILL)
        // In a PID namespace of its own the parent is the namespace's init, whose end ends this
        // process, and the host sets no APPHOST_PARENT_PID.
        if let expected = getenv(parentPIDVariable).flatMap({ Int32(String(cString: $0)) }), getppid() != expected {
            _exit(0)
        }
        // Exec'd ahead of its launch, it holds its variables' places as the template does, empty.
        if getenv(standbyExecedVariable) != nil { holdPlaceholders() }
        // A process made ahead of its launch (a standby) has no container yet: `ps` names it so
        // until its configuration comes (then it takes the app's name).
        if getenv("HOME").map({ $0.pointee == 0 }) ?? true { prepareStandby() }
        let socket = ControlChannel(fd: controlFD)
        try? socket.send(body: WireCoding.encode(AppMessage.hello(protocolVersion: wireProtocolVersion, pid: getpid())))

        let configuration: WireConfiguration
        // The configuration's bytes as they came, for the plugin's entry point.
        let configurationBytes: ArraySlice<UInt8>
        do {
            guard let body = try socket.receive() else { _exit(0) }
            guard case .configure(let received) = try WireCoding.decode(HostMessage.self, from: body),
                  let bytes = WireCoding.configurationBytes(in: body) else {
                fail(socket, "the host's first message was not a configuration")
            }
            configuration = received
            configurationBytes = bytes
        } catch {
            fail(socket, "unreadable configuration from the host: \(error)")
        }
        _ = apphost_set_thread_name(String(configuration.bundleName.prefix(15)))
        takeEnvironment(of: configuration, socket: socket)
        // The whole confinement is timed, the namespace's mounts included.
        let confinementStarted = ContinuousClock.now
        askNSCDOutsideTheSandbox()
        // Confinement, before any plugin code: an app that cannot be confined does not run.
        // What needs nothing of the file system (its user, capabilities, limits and system-call
        // filter) is done while the namespace's init isolates it; Landlock's rules, once it has.
        var plan = plan(for: configuration)
        let listener = confineProcess(plan, socket: socket)
        let landlockABI: Int32
        if configuration.sandbox?.namespaced == true {
            // Its init made the app's ruleset too, while the runner confined itself.
            let ruleset = awaitIsolatedFileSystem(socket: socket)
            // None only where the kernel has no Landlock: the init does not decide for it.
            if ruleset == nil && Landlock.abiVersion > 0 {
                fail(socket, "cannot confine the app process: its init made no Landlock ruleset")
            }
            landlockABI = restrictFiles(socket) { () throws(SystemError) in try Landlock.enforce(ruleset) }
        } else {
            plan.sharedRules = standbyRules
            // Confinement closes it.
            standbyRules = nil
            landlockABI = restrictFiles(socket) { () throws(SystemError) in try Confinement.restrictFiles(plan) }
        }
        reportConfinement(listener: listener, landlockABI: landlockABI, socket: socket, since: confinementStarted)
        // The host's working directory means nothing to the app (and may be out of its user's
        // reach): it starts in its container.
        _ = chdir(configuration.containerPath)
        // Before any plugin code (its initializers included): a crash sends its backtrace, and
        // the host's sample signal the main thread's (CAppHostCrash). A few system calls; if
        // they fail, the reports say that no backtrace came.
        _ = apphost_crash_install(diagnosticsFD)

        let entry = loadPlugin(configuration, socket: socket)
        let status = configurationBytes.withUnsafeBufferPointer { bytes in
            var arguments = apphost_entry_arguments(
                abi_version: APPHOST_PLUGIN_ABI_VERSION, control_fd: controlFD, configuration: bytes.baseAddress,
                configuration_length: UInt64(bytes.count))
            return entry(&arguments)
        }
        fail(socket, "the plugin's entry point returned \(status)")
    }

    /// In a process made ahead of its launch (a standby), what it can do before its app is known,
    /// while nothing waits for it: drops from its bounding set every capability that no app of
    /// its host may keep (the policy's allowed ones, which the host names in
    /// `standbyCapabilitiesVariable`), and writes once to the memory that decoding its
    /// configuration writes to (each page a fork shares with the template is copied at its
    /// first write); exec'd, it loads the SDK and warms up as the template does.
    static func prepareStandby() {
        _ = apphost_set_thread_name(standbyThreadName)
        if let names = getenv(standbyCapabilitiesVariable).map({ String(cString: $0) }) {
            // The host's policy is not the app's to read.
            unsetenv(standbyCapabilitiesVariable)
            try? Confinement.dropCapabilityBounds(keeping: names.split(separator: ",").map(String.init))
        }
        if getenv(standbyExecedVariable) != nil {
            // Exec'd ahead of its launch (its own address-space layout): what a template's fork
            // inherits done, it does itself while nothing waits for it.
            unsetenv(standbyExecedVariable)
            LaunchTemplate.loadTheSDK()
            LaunchTemplate.warmUp()
        } else {
            _ = try? WireCoding.decode(HostMessage.self, from: WireCoding.encode(HostMessage.configure(.everyPart)))
        }
        // In namespaces its init adds them to the app's ruleset, before the launch too.
        let namespaced = getenv(standbyNamespaceVariable) != nil
        unsetenv(standbyNamespaceVariable)
        if !namespaced { standbyRules = try? Landlock.prepare(Landlock.sharedRules) }
        // Foundation's state of a process that every app's SDK makes first: the main thread's
        // run loop (its descriptors and the structures it runs with), the main thread's Thread
        // and the default notification center. None of them starts a thread: until its
        // confinement, this process has one.
        _ = RunLoop.main
        _ = Thread.current
        _ = NotificationCenter.default
        // Last, so that its init has made it meanwhile. One that cannot ends, as its init does
        // when it cannot make it: the host finds the standby gone, and a launch forks an app
        // process that makes its namespace, and says why if it cannot.
        if namespaced && !Namespaces.joinPreparedNamespace() { _exit(1) }
    }

    /// In a standby exec'd with the template's placeholders (before anything reads a variable):
    /// keeps where each value is and how long it may be, and empties them, as a standby forked
    /// from the template finds them; `takeEnvironment` writes the container's over them.
    static func holdPlaceholders() {
        // Kept for the process's life: the shims keep the names.
        let names = launchTemplatePlaceholders.map { strdup($0) }
        let prepared = names.withUnsafeBufferPointer { names in
            names.withMemoryRebound(to: UnsafePointer<CChar>?.self) { apphost_template_prepare($0.baseAddress, Int32($0.count)) }
        }
        var none: [UnsafeMutablePointer<CChar>?] = [nil]
        guard prepared == 0, apphost_template_take_environment(&none) == 0 else { _exit(1) }
    }

    /// glibc asks nscd first at each user or group look-up (`UserDefaults` makes one), over a
    /// socket(AF_UNIX) that the app's sandbox refuses and the host reports as a violation, two
    /// per kind. Where no nscd runs, one look-up of each kind outside the sandbox makes glibc
    /// stop asking for the next hundred. The launch template asks before its first fork (its
    /// forks inherit the answer); an exec'd app process, before its confinement.
    static func askNSCDOutsideTheSandbox() {
        guard !askedNSCD else { return }
        askedNSCD = true
        _ = getpwuid(getuid())
        _ = getgrgid(getgid())
    }

    nonisolated(unsafe) private static var askedNSCD = false

    /// The Landlock ruleset a standby made before its launch, holding `Landlock.sharedRules`.
    nonisolated(unsafe) static var standbyRules: Landlock.Ruleset?

    /// Sets the variables of the app's container (HOME, TMPDIR, the XDG directories), over the
    /// launch template's placeholders, in a fork of the template: one made ahead of its launch
    /// (a standby, README.md "How apps are launched") learns its container only from its
    /// configuration. (A fork made for its launch has them already; an exec'd process too.)
    static func takeEnvironment(of configuration: WireConfiguration, socket: ControlChannel) {
        let variables = containerEnvironment(configuration.containerPath).map { strdup($0) } + [nil]
        defer { variables.forEach { free($0) } }
        guard apphost_template_take_environment(variables) == 0 else {
            fail(socket, errno == ENAMETOOLONG
                ? "its container's path is longer than the launch template's \(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) bytes for it"
                : "cannot set its environment: \(errnoText(errno))")
        }
    }

    /// In namespaces of the app's own (this process is pid 2, under apphost-init): waits for the
    /// init to have hidden the other apps' containers, made the file system read-only outside
    /// the app's containers, and /proc the namespace's.
    /// Returns the app's Landlock ruleset its init made (nil where the kernel has no Landlock).
    static func awaitIsolatedFileSystem(socket: ControlChannel) -> Int32? {
        switch Namespaces.awaitIsolatedFileSystem() {
        case .success(let ruleset): return ruleset
        case .failure(let failure): fail(socket, "cannot isolate the app's file system: \(failure)")
        }
    }

    /// Confines this process but for its files (`Confinement.confineProcess`): returns the
    /// seccomp filter's user-notification listener, if it has one, for `reportConfinement` to
    /// hand over.
    static func confineProcess(_ plan: Confinement.Plan, socket: ControlChannel) -> Int32? {
        do {
            return try Confinement.confineProcess(plan)
        } catch {
            fail(socket, "cannot confine the app process: \(error)")
        }
    }

    /// Restricts this process's files (Landlock) with `restrict`, which returns the Landlock ABI.
    static func restrictFiles(_ socket: ControlChannel, _ restrict: () throws(SystemError) -> Int32) -> Int32 {
        do {
            return try restrict()
        } catch {
            fail(socket, "cannot confine the app process: \(error)")
        }
    }

    /// Tells the supervisor the process is confined, handing it the seccomp listener; the app
    /// keeps no copy of it (it could answer its own refusals).
    static func reportConfinement(listener: Int32?, landlockABI: Int32, socket: ControlChannel, since started: ContinuousClock.Instant) {
        let took = started.duration(to: .now)
        let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        let message = WireCoding.encode(AppMessage.sandboxed(
            listener: listener != nil, landlockABI: landlockABI, uid: getuid(), seconds: seconds))
        if let listener {
            do { try socket.send(body: message, passing: listener) } catch { _exit(78) }
            close(listener)
        } else {
            try? socket.send(body: message)
        }
    }

    /// The confinement a configuration asks for. The launch template makes one before any
    /// fork (`LaunchTemplate.warmUp`): the first made in a process looks up its sets'
    /// conformances across every loaded image (0.2 ms, measured).
    static func plan(for configuration: WireConfiguration) -> Confinement.Plan {
        let namespaced = configuration.sandbox?.namespaced == true
        // In a PID namespace the parent is its init, whose end ends this process anyway.
        var plan = Confinement.Plan(parentPID: namespaced ? nil : getppid())
        plan.capabilities = configuration.capabilities ?? []
        plan.openFiles = configuration.openFileLimit ?? 1024
        if let sandbox = configuration.sandbox {
            plan.entitlements = Set(sandbox.entitlements.compactMap(SyscallProfile.Entitlement.init(rawValue:)))
            plan.processes = sandbox.processLimit
            if let filter = sandbox.filter {
                plan.filter = Seccomp.Program(instructions: Array(filter), notifies: sandbox.filterNotifies ?? false)
            }
            if let uid = sandbox.uid, let gid = sandbox.gid {
                plan.user = Confinement.User(uid: uid, gid: gid, groups: sandbox.groups ?? [])
            }
        }
        if !namespaced {
            plan.fileRules = Landlock.appRules(
                processes: "/proc/\(getpid())", readable: configuration.sandbox?.readablePaths ?? [], bundle: configuration.bundlePath,
                plugin: configuration.pluginPath, writable: configuration.sandbox?.writablePaths ?? [])
        }
        return plan
    }

    /// Loads the plugin and returns its entry point, or reports why it cannot be used. The plugin
    /// is never unloaded: unmapping a Swift image leaves the runtime pointing at freed metadata.
    static func loadPlugin(_ configuration: WireConfiguration, socket: ControlChannel) -> apphost_plugin_main_function {
        // For the failures' reasons only: bridging to NSString runs cold Foundation code.
        // The bundle as its directory is named (a bundle's CFBundleName need not be its directory's).
        var plugin: String {
            let bundle = configuration.bundlePath.isEmpty ? "\(configuration.bundleName).app" : (configuration.bundlePath as NSString).lastPathComponent
            return "\(bundle)/\((configuration.pluginPath as NSString).lastPathComponent)"
        }
        guard let handle = dlopen(configuration.pluginPath, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            fail(socket, "\(plugin) cannot be loaded: \(reason)")
        }
        guard let recordSymbol = dlsym(handle, "apphost_plugin_record") else {
            fail(
                socket,
                "\(plugin) is not an apphost plugin: it exports no apphost_plugin_record; "
                    + "build it as a .dynamic library product that depends on AppHostKit"
            )
        }
        let record = recordSymbol.assumingMemoryBound(to: apphost_plugin_record.self).pointee
        guard record.magic == APPHOST_PLUGIN_MAGIC else {
            fail(socket, "\(plugin) is not an apphost plugin: its apphost_plugin_record is not apphost's")
        }
        guard record.abi_version == APPHOST_PLUGIN_ABI_VERSION else {
            fail(
                socket,
                "\(plugin) was built against AppHostKit ABI version \(record.abi_version), but this apphost "
                    + "speaks version \(APPHOST_PLUGIN_ABI_VERSION); rebuild the plugin against this apphost's AppHostKit"
            )
        }
        let theirs = record.toolchain.map { String(cString: $0) } ?? "an unknown toolchain"
        let ours = String(cString: apphost_toolchain_id())
        guard theirs == ours else {
            fail(
                socket,
                "\(plugin) was built by another Swift toolchain than this apphost, which Swift \(Toolchain.swiftVersion) built; "
                    + "Swift has no stable ABI on Linux, so rebuild the plugin with Swift \(Toolchain.swiftVersion) "
                    + "(its compiler: \(theirs); this apphost's: \(ours))"
            )
        }
        guard let entrySymbol = dlsym(handle, "apphost_plugin_main") else {
            fail(socket, "\(plugin) exports no apphost_plugin_main entry point; is AppHostKit linked into it?")
        }
        return unsafeBitCast(entrySymbol, to: apphost_plugin_main_function.self)
    }

    /// Tells the supervisor why the app cannot start, and ends the app process.
    static func fail(_ socket: ControlChannel, _ reason: String) -> Never {
        try? socket.send(body: WireCoding.encode(AppMessage.launchFailed(reason: reason)))
        _exit(78)
    }
}
