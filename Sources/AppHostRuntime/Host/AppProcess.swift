#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims
import CAppHostCrash

/// One app process and everything the host holds for it: its pidfd, its control channel, its
/// output pipe, its cgroups, its seccomp listener and the event sources watching them.
///
/// It owns all of it: `close()` is the whole teardown, and nothing else closes a descriptor or
/// removes a group of an app process. Touched only on the supervisor's queue (hence
/// `@unchecked Sendable`, for the event handlers that capture it).
final class AppProcess: @unchecked Sendable {
    /// The groups an app process is put in, where the host has the hierarchies.
    struct Groups {
        /// Its cgroup v2 group, which the freezer freezes.
        var freezer: Cgroup?
        /// Its cgroup v1 pids group (the process limit).
        var pids: Cgroup?
        /// Its cgroup v1 memory group (the memory limits).
        var memory: MemoryGroup?

        /// Their directories.
        var paths: [String] { [freezer, pids, memory?.group].compactMap { $0?.path } }

        /// Removes groups that never held the process.
        func discard() {
            freezer?.remove()
            pids?.remove()
            memory?.discard()
        }
    }

    /// The process the host started: the app process itself, or, in namespaces of its own,
    /// their init (apphost-init), whose end ends every process of the app.
    let startedPID: pid_t
    /// Readable when the started process ends (pidfd_open); the host waits on it.
    let pidfd: Int32
    /// Whether the app runs in a PID namespace of its own, under an init.
    let isNamespaced: Bool
    /// The app process: the started process, or in a PID namespace the init's child, from the
    /// moment it is known (`followAppProcess`). /proc is read here.
    private(set) var pid: pid_t
    /// The app process's pidfd, where it is not the started process; signals go through one of
    /// the two, never by pid.
    private var appPidfd: Int32?
    /// In a PID namespace: the socket on which the init writes how the app process ended.
    private let initChannel: Int32?
    private let channel: ControlChannel
    private var receiver: FrameReceiver
    /// Where the process is in its conversation with the host (see `ControlStage`).
    private(set) var stage = ControlStage.awaitingHello
    private let output: OutputForwarder
    /// The host's end of the diagnostics socket: backtrace records from the app process.
    private let diagnostics: Int32
    /// Records taken so far, valid or not; past `maximumDiagnostics` the socket is no longer read.
    private var diagnosticsReceived = 0
    private let groups: Groups
    /// The launch template, while it may still be in this process's cgroup v1 groups (its fork
    /// was born in them): never killed with them (Launchpad).
    private let spared: pid_t?
    /// The seccomp listener, once the runner has handed it over.
    private(set) var listener: SyscallListener?
    /// The control socket's registration with the host's reader, while it is read.
    private var controlKey: UInt64?
    private weak var controlReader: ControlReader?
    private var exitSource: (any DispatchSourceRead)?
    private var outputSource: (any DispatchSourceRead)?
    private var listenerSource: (any DispatchSourceRead)?
    private var memorySource: (any DispatchSourceRead)?
    private var diagnosticsSource: (any DispatchSourceRead)?
    private(set) var isClosed = false
    /// The host's timers, once watching started: removals that must wait are retried by them.
    private var timers: HostTimers?

    /// Takes the spawned process and puts it in `groups` (a group it cannot join is dropped).
    /// It must be in them before the configuration is sent: the runner waits for it, so no app
    /// code runs outside them.
    init(_ spawned: SpawnedProcess, groups: Groups, name: String, forwardOutput: Bool, sparing template: pid_t? = nil) {
        spared = template
        startedPID = spawned.pid
        pid = spawned.pid
        pidfd = spawned.pidfd
        initChannel = spawned.initChannel
        isNamespaced = spawned.initChannel != nil
        channel = ControlChannel(fd: spawned.control)
        receiver = FrameReceiver(channel: channel)
        // Until the runner reports its sandbox, the one message that carries a descriptor (the
        // seccomp listener) may still come.
        receiver.descriptorAllowance = 1
        output = OutputForwarder(fd: spawned.output, name: name, pid: spawned.pid, forward: forwardOutput)
        diagnostics = spawned.diagnostics
        self.groups = Self.join(groups, spawned: spawned, sparing: template)
        // In a PID namespace the init's child, which joined the groups, is the app process from
        // the start: every event, `launching` first, says its pid, not the init's.
        followAppProcess()
    }

    /// Puts the process that runs app code in `groups`, and returns those it is in (a group it
    /// cannot join is removed and dropped). It must be in them before its configuration is
    /// sent: the runner waits for it, so no app code runs outside them. The started process,
    /// or in namespaces the init's child (the init, apphost-init, runs none: moved by the host
    /// it is in none of them; a template's fork, it is born in the v1 ones with its child). A
    /// template's fork that found its configuration written ahead was born in all of them (the
    /// template waits in the v1 groups and starts it in the v2 group: ProcessStart). A move may
    /// wait out an RCU grace period, milliseconds: a launch's is made on the spawn thread
    /// (ProcessStart), and finds it done here.
    static func join(_ groups: Groups, spawned: SpawnedProcess, sparing template: pid_t?) -> Groups {
        let member = spawned.initChannel != nil ? ProcFS.children(of: spawned.pid).first : spawned.pid
        // Born in it, or moved. Reading cgroup.procs costs no grace period.
        func join(_ group: Cgroup) -> Bool {
            guard let member else { return false }
            return group.processes.contains(member) || (try? group.add(pid: member)) != nil
        }
        var joined = groups
        if let group = groups.freezer, !spawned.startedInGroup, !join(group) {
            group.remove()
            joined.freezer = nil
        }
        if let group = groups.pids, !join(group) {
            group.remove(sparing: template)
            joined.pids = nil
        }
        if let group = groups.memory, !join(group.group) {
            group.discard(sparing: template)
            joined.memory = nil
        }
        return joined
    }

    var cgroup: Cgroup? { groups.freezer }
    /// The directories of the groups it is in.
    var groupPaths: [String] { groups.paths }
    var memoryGroup: MemoryGroup? { groups.memory }

    /// Every process of the app: its group's members (children included), else itself.
    var processes: [pid_t] {
        if let members = groups.pids?.processes.filter({ $0 != spared }), !members.isEmpty { return members }
        if let members = groups.memory?.group.processes.filter({ $0 != spared }), !members.isEmpty { return members }
        return pid != startedPID ? [startedPID, pid] : [pid]
    }

    /// The pid the app sees as its own (in its PID namespace, if it has one).
    var pidInNamespace: pid_t { isNamespaced ? Namespaces.appPID : pid }

    /// In a PID namespace: follows the app process, the init's one child, from its start (or,
    /// if the init had not forked it yet then, once it has said hello). If it has already
    /// ended, the init is followed to its end, which follows.
    func followAppProcess() {
        guard isNamespaced, appPidfd == nil, !isClosed, let child = ProcFS.children(of: startedPID).first else { return }
        let fd = apphost_pidfd_open(child)
        guard fd >= 0 else { return }
        appPidfd = fd
        pid = child
        output.rename(pid: child)
    }

    /// Sends a signal to the app process through a pidfd (never to a pid that may have been
    /// reused); nothing once the handle is closed. Before the app process is known in a PID
    /// namespace, to the init, which takes only SIGKILL and SIGSTOP from the host.
    func signal(_ number: Int32) {
        guard !isClosed else { return }
        _ = apphost_pidfd_send_signal(appPidfd ?? pidfd, number)
    }

    /// SIGKILL to every process of the app: the whole group at once where there is one (frozen
    /// v2 members and stopped processes die of it too), else the started process (in a PID
    /// namespace its init, whose end ends them all) and the members of its groups.
    func killAll() {
        guard !isClosed else { return }
        if let cgroup = groups.freezer, cgroup.killAll() { return }
        _ = apphost_pidfd_send_signal(pidfd, SIGKILL)
        signal(SIGKILL)
        // Children made with the spawn entitlement go with it.
        for member in processes where member != startedPID && member != pid { kill(member, SIGKILL) }
    }

    /// How the app process ended, where the init of its PID namespace wrote it (it did not if
    /// it was killed first: then the init's own end is the app's).
    func recordedExit() -> apphost_exit_record? {
        guard let initChannel else { return nil }
        var record = apphost_exit_record()
        let count = withUnsafeMutableBytes(of: &record) { read(initChannel, $0.baseAddress, $0.count) }
        return count == MemoryLayout<apphost_exit_record>.size ? record : nil
    }

    // MARK: Watching

    /// Starts watching the process: `control` when its control socket is readable (through
    /// `reader`), `exit` when it has ended, `memory` when its memory group runs out,
    /// `diagnostics` when a backtrace record has come. Its output is forwarded by itself.
    func start(
        on queue: DispatchQueue, timers: HostTimers, reader: ControlReader, control: @escaping @Sendable () -> Void, exit: @escaping @Sendable () -> Void,
        memory: @escaping @Sendable () -> Void, diagnostics: @escaping @Sendable () -> Void
    ) {
        self.timers = timers
        controlReader = reader
        controlKey = reader.watch(channel.fd, handler: control)
        if controlKey == nil { closeIgnoringErrors(channel.fd) }
        diagnosticsSource = watch(self.diagnostics, on: queue, handler: diagnostics)
        exitSource = watch(pidfd, on: queue, handler: exit)
        outputSource = watch(output.fd, on: queue) { [weak self] in
            guard let self, !output.drain() else { return }
            outputSource?.cancel()
            outputSource = nil
        }
        if let group = groups.memory {
            memorySource = watch(group.oomEvents, on: queue) {
                var count: UInt64 = 0
                _ = read(group.oomEvents, &count, 8)
                if group.isUnderOOM { memory() }
            }
        }
    }

    /// A read source whose cancel handler closes `fd`: the descriptor lives exactly as long as
    /// its source.
    private func watch(_ fd: Int32, on queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler(handler: handler)
        source.setCancelHandler { closeIgnoringErrors(fd) }
        source.activate()
        return source
    }

    // MARK: The control channel

    /// Whether the host still reads the control channel.
    var isReadingControl: Bool { controlKey != nil }

    /// Sends a message without blocking; a full socket throws EAGAIN.
    func send(_ message: HostMessage) throws(SystemError) {
        try channel.send(body: WireCoding.encode(message), nonBlocking: true)
    }

    /// The complete frames available (reading at most `budget` bytes, taking at most
    /// `maximumFrames`), and the end of the stream if it has come.
    func receive(budget: Int, maximumFrames: Int) -> FrameReceiver.Batch {
        receiver.receive(budget: budget, maximumFrames: maximumFrames)
    }

    /// Whether frames already read wait to be taken (the socket may have nothing new).
    var hasBufferedFrames: Bool { receiver.hasBufferedFrames }

    /// Judges `message` against the protocol's table: nil if it is accepted now (and the stage
    /// moves on), else what is wrong with it.
    func accept(_ message: AppMessage) -> String? {
        if let refusal = stage.refusal(of: message) { return refusal }
        stage = stage.after(message)
        // After the sandbox is reported, no message carries a descriptor.
        if stage != .confining { receiver.descriptorAllowance = 0 }
        return nil
    }

    /// Stops reading the control channel (it ended, or the app broke the protocol); closes it.
    func closeChannel() {
        receiver.closeDescriptors()
        guard let key = controlKey else { return }
        controlReader?.unwatch(key, fd: channel.fd)
        controlKey = nil
        closeIgnoringErrors(channel.fd)
    }

    // MARK: Diagnostics

    /// How many records one process may send in its life: a crash sends one, each watchdog
    /// sample one. An app that sends more is no longer heard (its reports say so).
    static let maximumDiagnostics = 16

    /// Whether the process sent more records than it may.
    private(set) var diagnosticsExhausted = false

    /// The records waiting on the diagnostics socket (at most 4 a turn), checked; malformed
    /// datagrams are dropped. Descriptors passed with them are closed by the kernel (`recv`
    /// takes no control data).
    func receiveDiagnostics() -> [CrashRecord] {
        guard diagnosticsSource != nil else { return [] }
        var records: [CrashRecord] = []
        var buffer = [UInt8](repeating: 0, count: CrashRecord.size + 1)
        for _ in 0..<4 {
            let count = buffer.withUnsafeMutableBytes { recv(diagnostics, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard count > 0 else {
                stopDiagnostics()
                break
            }
            diagnosticsReceived += 1
            if let record = CrashRecord(datagram: buffer[0..<count]) { records.append(record) }
            if diagnosticsReceived >= Self.maximumDiagnostics {
                diagnosticsExhausted = true
                stopDiagnostics()
                break
            }
        }
        return records
    }

    /// Tells a crashing thread that the host has read what it needs from the living process:
    /// it may die now.
    func acknowledgeCrash() {
        guard diagnosticsSource != nil else { return }
        _ = Glibc.send(diagnostics, "k", 1, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
    }

    private func stopDiagnostics() {
        diagnosticsSource?.cancel()
        diagnosticsSource = nil
    }

    /// The last fatal-error message of the Swift runtime in the app's recent output.
    var fatalErrorMessage: String? { output.recentFatalMessage }

    /// Asks the main thread for its backtrace (CAppHostCrash's sample signal, to the process:
    /// its handler passes it on to the main thread).
    func requestMainThreadSample() {
        signal(APPHOST_CRASH_SAMPLE_SIGNAL)
    }

    // MARK: The seccomp listener

    /// Takes the runner's seccomp listener; `refusals` runs when refused calls wait in it.
    func adopt(_ listener: SyscallListener, on queue: DispatchQueue, refusals: @escaping @Sendable () -> Void) {
        self.listener = listener
        let source = DispatchSource.makeReadSource(fileDescriptor: listener.fd, queue: queue)
        source.setEventHandler(handler: refusals)
        // The listener closes its descriptor when it goes, after its source.
        source.setCancelHandler { withExtendedLifetime(listener) {} }
        source.activate()
        listenerSource = source
    }

    // MARK: The end

    deinit { close() }

    /// The whole teardown, once the process has ended: the rest of its output (up to a budget)
    /// forwarded, every source cancelled (their cancel handlers close the descriptors), every
    /// group emptied and removed. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if outputSource != nil { output.finish() }
        closeChannel()
        for source in [exitSource, outputSource, listenerSource, memorySource, diagnosticsSource] { source?.cancel() }
        diagnosticsSource = nil
        exitSource = nil
        outputSource = nil
        listenerSource = nil
        memorySource = nil
        listener = nil
        if let appPidfd { closeIgnoringErrors(appPidfd) }
        appPidfd = nil
        if let initChannel { closeIgnoringErrors(initChannel) }
        // Children of the app (with the spawn entitlement) do not outlive it; a group whose
        // killed members have not finished exiting is removed a little later, off this turn.
        for group in [groups.memory?.group, groups.pids, groups.freezer].compactMap({ $0 }) where !group.remove(sparing: spared) {
            timers.map { [spared] in group.remove(retryingWith: $0, sparing: spared) }
        }
    }
}

extension Cgroup {
    /// Removes the group, trying again every 10 ms, for up to a second, while the kernel still
    /// holds it.
    func remove(retryingWith timers: HostTimers, attempts: Int = 100, sparing: pid_t? = nil) {
        guard attempts > 0 else { return }
        // The timers live until the group is gone, even past their host.
        timers.after(.milliseconds(10)) {
            if !remove(sparing: sparing) { remove(retryingWith: timers, attempts: attempts - 1, sparing: sparing) }
        }
    }
}
