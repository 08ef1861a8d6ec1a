#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// The host's side of the launch template (docs/launching.md, "How apps are launched"): starts
/// `apphost __template`, asks it for app processes, and notices when it ends.
///
/// The template must be started, and asked, from the spawn thread: the processes it forks are
/// the host's children (CLONE_PARENT), whose parent-death signal fires when the thread that
/// started the template ends, and the spawn thread lives as long as the host.
final class TemplateLauncher: Sendable {
    /// A running template: its pid, its pidfd (readable when it ends) and the host's end of
    /// its socket.
    struct Running: Sendable {
        var pid: pid_t
        var pidfd: Int32
        var socket: Int32
    }

    private let executable: String
    private let environment: [String]
    private let running = Mutex<Running?>(nil)
    /// How long a request may wait for the template's answer (it starts up in tens of
    /// milliseconds; past this it is taken for hung, killed, and the launch fails).
    static let answerTimeout: Duration = .seconds(2)

    /// Why the template did not start an app process. `unanswered`: the request went out and
    /// no answer came back, so a process may have started with its descriptors: the launch
    /// fails rather than exec another on them. `refused`: nothing was started.
    enum Failure: Error, CustomStringConvertible {
        case refused(SystemError)
        case unanswered(SystemError)

        var description: String {
            switch self {
            case .refused(let error), .unanswered(let error): "\(error)"
            }
        }
    }

    /// `executable` is apphost's binary; `environment` the template's own (the variables the
    /// Swift runtime and libdispatch read at start-up; each app process gets its own).
    init(executable: String, environment: [String]) {
        self.executable = executable
        // Every library's functions bound when the template starts (3 ms, once), not at each
        // one's first call in each fork: a fork inherits the bound entries, and finds no symbol
        // (0.2 ms of lookups and the page faults of the symbol tables per launch, measured).
        self.environment = environment + ["LD_BIND_NOW=1"]
    }

    /// The running template, if any.
    var current: Running? { running.withLock { $0 } }

    /// Starts the template. On the spawn thread.
    func start() throws(SystemError) -> Running {
        var fds: [Int32] = [-1, -1]
        try valueOrErrno("socketpair") { socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) }
        defer { closeIgnoringErrors(fds[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Its own output (a crash message, nothing else) goes where the host's errors go.
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 3)
        _ = apphost_spawn_close_from(&actions, 4)
        let pid: pid_t
        do {
            pid = try spawnWithCleanSignals(
                executable, [launchTemplateArgument], environment: environment, fileActions: &actions, ownProcessGroup: true)
        } catch {
            closeIgnoringErrors(fds[0])
            throw error
        }
        let pidfd = apphost_pidfd_open(pid)
        guard pidfd >= 0 else {
            let error = SystemError("pidfd_open of the launch template", errno: errno)
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
            closeIgnoringErrors(fds[0])
            throw error
        }
        var timeout = timeval(tv_sec: Int(Self.answerTimeout.components.seconds), tv_usec: 0)
        setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let template = Running(pid: pid, pidfd: pidfd, socket: fds[0])
        running.withLock { $0 = template }
        return template
    }

    /// Asks the template for an app process with `descriptors` (stdin, stdout, stderr, control,
    /// diagnostics and, in namespaces, the init's channel) and, where `cgroup` is given, started
    /// in that cgroup v2 directory (with `requireGroup`, there or not at all). On the spawn
    /// thread. Throws if the template is not running or fails: the caller then execs.
    func spawn(
        _ request: LaunchTemplateRequest, descriptors: [Int32], cgroup: Int32?, requireGroup: Bool = false
    ) throws(Failure) -> (pid: pid_t, pidfd: Int32, startedInGroup: Bool) {
        guard let template = current else { throw .refused(SystemError("the launch template is not running", errno: ESRCH)) }
        var request = request
        request.intoCgroup = cgroup != nil
        request.requireCgroup = requireGroup && cgroup != nil
        let passed = descriptors + (cgroup.map { [$0] } ?? [])
        let body = request.compactBytes
        guard body.count <= LaunchTemplateRequest.maximumSize, passed.count <= LaunchTemplateRequest.maximumDescriptors else {
            throw .refused(SystemError("a launch template request of \(body.count) bytes", errno: E2BIG))
        }
        let sent = body.withUnsafeBytes { bytes in
            passed.withUnsafeBufferPointer { apphost_send_with_fds(template.socket, bytes.baseAddress, bytes.count, $0.baseAddress, Int32($0.count)) }
        }
        // A datagram goes whole or not at all: nothing was asked.
        guard sent == body.count else { throw .refused(hung(template, SystemError("send to the launch template", errno: errno))) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var pidfd: Int32 = -1
        var count: Int32 = 0
        let received = buffer.withUnsafeMutableBytes { apphost_template_receive(template.socket, $0.baseAddress, $0.count, &pidfd, 1, &count) }
        guard received > 0 else {
            throw .unanswered(hung(template, SystemError(
                received == 0 ? "the launch template closed its socket" : "answer of the launch template", errno: received == 0 ? EPIPE : errno)))
        }
        guard let reply = try? LaunchTemplateReply(compact: buffer.prefix(received)) else {
            if count > 0 { closeIgnoringErrors(pidfd) }
            throw .unanswered(hung(template, SystemError("unreadable answer of the launch template", errno: EPROTO)))
        }
        guard let pid = reply.pid, count == 1 else {
            if count > 0 {
                // A process the template started and that failed before it ran: the host's child.
                var status = apphost_child_status()
                _ = apphost_waitid_pidfd(pidfd, WEXITED, &status)
                closeIgnoringErrors(pidfd)
            }
            throw .refused(SystemError(reply.failure ?? "the launch template", errno: reply.errno ?? EPROTO))
        }
        return (pid, pidfd, reply.startedInCgroup == true)
    }

    /// Moves the template into `groups` (the next launch's cgroup v1 groups), so that its next
    /// fork is born in them; if it cannot be moved into all, back into `fallback` (the host's
    /// own), out of the last app's. On the spawn thread, between requests. Returns whether it
    /// is in all of `groups`.
    func enter(_ groups: [Cgroup], fallback: [Cgroup]) -> Bool {
        guard let template = current else { return false }
        let moved = groups.map { (try? $0.add(pid: template.pid)) != nil }
        guard moved.contains(false) else { return true }
        for group in fallback { try? group.add(pid: template.pid) }
        return false
    }

    /// A template that cannot be talked to is ended (its end is then noticed and it is started
    /// again); returns `error` for the caller to throw.
    private func hung(_ template: Running, _ error: SystemError) -> SystemError {
        _ = apphost_pidfd_send_signal(template.pidfd, SIGKILL)
        return error
    }

    /// Once its pidfd is readable: reaps the template through `pidfd` (a duplicate of its own:
    /// that is the watcher's to close, once it no longer watches it, which may be before this
    /// runs on the spawn thread) and forgets it. Returns how it ended.
    func reap(through pidfd: Int32) -> String {
        guard let template = running.withLock({ value -> Running? in
            defer { value = nil }
            return value
        }) else { return "" }
        var status = apphost_child_status()
        _ = apphost_waitid_pidfd(pidfd, WEXITED, &status)
        closeIgnoringErrors(template.socket)
        switch Int(status.code) {
        case CLD_EXITED: return "exited with status \(status.status)"
        case CLD_KILLED, CLD_DUMPED: return "killed by signal \(status.status) (\(String(cString: strsignal(status.status))))"
        default: return "ended"
        }
    }

    /// Ends the template for good (the host is shutting down): it sees its socket close and
    /// exits; it is killed as well, and reaped. (Its pidfd is the watcher's to close.)
    func stop() {
        guard let template = running.withLock({ value -> Running? in
            defer { value = nil }
            return value
        }) else { return }
        closeIgnoringErrors(template.socket)
        _ = apphost_pidfd_send_signal(template.pidfd, SIGKILL)
        var status = apphost_child_status()
        _ = apphost_waitid_pidfd(template.pidfd, WEXITED, &status)
    }
}
