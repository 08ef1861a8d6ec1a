import CAppHostShims
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import AppHostProtocol
import AppHostSandbox

/// One app process and everything the host holds for it: its pidfd, its control channel, its
/// output pipe, its cgroups, its seccomp listener and the event sources watching them.
///
/// It owns all of it: `close()` is the whole teardown, and nothing else closes a descriptor or
/// removes a group of an app process. Touched only on the supervisor's queue (hence
/// `@unchecked Sendable`, for the event handlers that capture it).
final class AppProcess: @unchecked Sendable {
    let pid: pid_t
    /// Readable when the process ends (pidfd_open); signals go through it, never by pid.
    let pidfd: Int32
    let channel: ControlChannel
    var receiver: FrameReceiver
    /// Where the process is in its conversation with the host (see `ControlStage`).
    var stage = ControlStage.awaitingHello
    let output: OutputForwarder
    /// The cgroup v2 group that freezes it, with its inotify watch on cgroup.events.
    var cgroup: AppCgroup?
    var watch: Int32?
    var pidsGroup: ControllerGroup?
    var memoryGroup: MemoryGroup?
    /// The seccomp listener, once the runner has handed it over.
    var listener: SyscallListener?
    var controlSource: (any DispatchSourceRead)?
    var exitSource: (any DispatchSourceRead)?
    var outputSource: (any DispatchSourceRead)?
    var listenerSource: (any DispatchSourceRead)?
    var memorySource: (any DispatchSourceRead)?
    private(set) var isClosed = false

    init(_ spawned: SpawnedProcess, output: OutputForwarder) {
        pid = spawned.pid
        pidfd = spawned.pidfd
        channel = ControlChannel(fd: spawned.control)
        receiver = FrameReceiver(channel: channel)
        // Until the runner reports its sandbox, the one message that carries a descriptor (the
        // seccomp listener) may still come; after it, none.
        receiver.descriptorAllowance = 1
        self.output = output
    }

    /// Sends a signal through the pidfd (never to a pid that may have been reused).
    func signal(_ number: Int32) {
        _ = apphost_pidfd_send_signal(pidfd, number)
    }

    /// Every process of the app: its group's members (children included), else itself.
    var processes: [pid_t] {
        if let members = pidsGroup?.processes, !members.isEmpty { return members }
        if let members = memoryGroup?.group.processes, !members.isEmpty { return members }
        return [pid]
    }

    /// Stops reading the control channel (it ended, or the app broke the protocol); closes it.
    func closeChannel() {
        receiver.closeDescriptors()
        controlSource?.cancel()
        controlSource = nil
    }

    /// Stops and closes the seccomp listener.
    func closeListener() {
        listenerSource?.cancel()
        listenerSource = nil
        listener = nil
    }

    /// The whole teardown, once the process has ended: every source cancelled (their cancel
    /// handlers close the descriptors), every group emptied and removed. Idempotent.
    func close(watcher: CgroupEventWatcher?) {
        guard !isClosed else { return }
        isClosed = true
        closeChannel()
        exitSource?.cancel()
        exitSource = nil
        outputSource?.cancel()
        outputSource = nil
        closeListener()
        memorySource?.cancel()
        memorySource = nil
        memoryGroup?.remove()
        if let watch { watcher?.unwatch(watch) }
        // Children of the app (with the spawn entitlement) do not outlive it.
        _ = cgroup?.killAll()
        pidsGroup?.remove()
        cgroup?.remove()
    }
}
