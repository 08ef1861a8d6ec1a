#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// A thread that lives as long as the host. App processes are spawned from it because the
/// parent-death signal fires when the *thread* that created a child exits, and Dispatch's worker
/// threads come and go.
final class SpawnThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    init() {
        // The thread never ends, so it keeps what it works on (unowned, a host that failed to
        // start freed it under the running thread).
        let thread = Thread { [self] in
            _ = apphost_set_thread_name("apphost-spawn")
            while true {
                self.condition.lock()
                while self.jobs.isEmpty { self.condition.wait() }
                let job = self.jobs.removeFirst()
                self.condition.unlock()
                job()
            }
        }
        thread.start()
    }

    /// Runs `body` on the spawn thread, after what is queued there, without waiting for it.
    func async(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(body)
        condition.signal()
        condition.unlock()
    }
}

/// The descriptors of a freshly spawned app process, owned by the supervisor.
struct SpawnedProcess: Sendable {
    var pid: pid_t
    /// Readable when the process ends (pidfd_open).
    var pidfd: Int32
    /// The supervisor's end of the control socket (non-blocking).
    var control: Int32
    /// The read end of the app's stdout and stderr (non-blocking).
    var output: Int32
    /// The supervisor's end of the diagnostics socket (SOCK_SEQPACKET, non-blocking): crash
    /// and main-thread backtraces from the app process's handlers (CAppHostCrash).
    var diagnostics: Int32
    /// In namespaces of its own: the socket on which the namespace's init writes how the app
    /// process ended (non-blocking).
    var initChannel: Int32?
    /// Started in its cgroup v2 group already (CLONE_INTO_CGROUP): the host need not move it.
    var startedInGroup = false
    /// Its configuration was written on its control socket before it started.
    var configured = false
    /// Why the launch template was asked and could not start it (the process was exec'd).
    var templateFailure: SystemError?
}

enum AppProcessSpawner {
    /// The largest configure message written on a control socket before its process starts:
    /// well inside a Unix socket's send buffer (about 200 KiB), so that the write never waits.
    static let maximumConfigurationAhead = 64 * 1024

    /// Spawns `executable arguments…` with the control socket on fd 3, the diagnostics socket on
    /// fd 4, stdout and stderr on a pipe, stdin on /dev/null, no other descriptors, default
    /// signal handling, an empty signal mask and its own process group (so the terminal's Ctrl-C
    /// reaches only the host, which ends the apps as sequence 7 says). With `namespaces`
    /// (Namespaces.Support.flags) it is the init of a PID namespace, with the socket to the host
    /// on fd 5, and `app` (the runner and its arguments) its first child, pid 2, with those
    /// descriptors but the last.
    ///
    /// With `template`, the process is the launch template's fork instead (the init in
    /// namespaces, which forks the app process; without, the app process itself), the app
    /// process started in `group` where it is given, and exec'd as above only if the template
    /// cannot. With `configuration` (a configure message's body) too, the template's fork
    /// finds it on its control socket, and must start in `group` or not at all: the caller
    /// vouches that it is born in its other groups. An exec'd process is never sent it here.
    /// Without `execIfRefused`, what the template refuses throws instead (a standby).
    static func spawn(
        executable: String, arguments: [String], environment: [String], namespaces: Int32, app: [String]? = nil,
        template: TemplateLauncher? = nil, group: Cgroup? = nil, configuration: [UInt8]? = nil, execIfRefused: Bool = true
    ) throws(SystemError) -> SpawnedProcess {
        var opened: [Int32] = []
        func pair(_ name: String, _ make: (inout [Int32]) -> Int32) throws(SystemError) -> (Int32, Int32) {
            var fds: [Int32] = [-1, -1]
            try valueOrErrno(name) { make(&fds) }
            opened += fds
            return (fds[0], fds[1])
        }
        var keep: Set<Int32> = []
        defer { for fd in opened where !keep.contains(fd) { closeIgnoringErrors(fd) } }

        func controlPair() throws(SystemError) -> (Int32, Int32) {
            try pair("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &$0) }
        }
        var (control, appControl) = try controlPair()
        let (output, appOutput) = try pair("pipe2") { apphost_pipe_cloexec(&$0) }
        // Datagrams: one record each, whole or not at all, whatever the app writes on its end.
        let (diagnostics, appDiagnostics) = try pair("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &$0)
        }
        let null = try valueOrErrno("open /dev/null") { open("/dev/null", O_RDONLY | O_CLOEXEC) }
        opened.append(null)
        var descriptors = [null, appOutput, appOutput, appControl, appDiagnostics]
        var initChannel: Int32?
        if namespaces != 0 {
            let (host, initEnd) = try pair("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &$0) }
            descriptors.append(initEnd)
            initChannel = host
        }

        var started: (pid: pid_t, pidfd: Int32)?
        var templateFailure: SystemError?
        var startedInGroup = false
        var configured = false
        if let template {
            let request = LaunchTemplateRequest(
                namespaces: namespaces, initArguments: namespaces != 0 ? [executable] + arguments : [], environment: environment,
                intoCgroup: false)
            let groupFD = group.map { open($0.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            defer { if let groupFD, groupFD >= 0 { closeIgnoringErrors(groupFD) } }
            let cgroup = groupFD.flatMap { $0 >= 0 ? $0 : nil }
            // A process configured after it starts gets a fresh socket: nothing written ahead,
            // whole or in part, may reach it before the host has moved it into its groups.
            func unconfigure() throws(SystemError) {
                (control, appControl) = try controlPair()
                descriptors[3] = appControl
                configured = false
            }
            // Written ahead only for a process that will start in its group, and only what the
            // socket takes at once (nobody reads it yet: a larger configuration, its transfers
            // say, is sent once the process runs).
            if let configuration, configuration.count <= Self.maximumConfigurationAhead, group == nil || cgroup != nil {
                do {
                    try ControlChannel(fd: control).send(body: configuration, nonBlocking: true)
                    configured = true
                } catch {
                    try unconfigure()
                }
            }
            func ask() -> Result<(pid: pid_t, pidfd: Int32, startedInGroup: Bool), TemplateLauncher.Failure> {
                Result { () throws(TemplateLauncher.Failure) in
                    try template.spawn(request, descriptors: descriptors, cgroup: cgroup, requireGroup: configured)
                }
            }
            var answer = ask()
            if configured, case .failure(.refused) = answer {
                // Perhaps the kernel cannot start a process in a cgroup (CLONE_INTO_CGROUP, Linux
                // 5.7): asked again without the configuration, the process is moved, as an exec'd
                // one is.
                try unconfigure()
                answer = ask()
            }
            switch answer {
            case .success(let forked):
                started = (forked.pid, forked.pidfd)
                startedInGroup = forked.startedInGroup
            case .failure(.refused(let error)):
                templateFailure = error
            case .failure(.unanswered(let error)):
                // A process the template may have started has these descriptors: none other may.
                throw SystemError("the launch template did not answer (\(error)); it is started again", errno: error.errno)
            }
        }
        if started == nil, let templateFailure, !execIfRefused { throw templateFailure }
        if started == nil {
            started = try exec(executable, arguments, environment: environment, namespaces: namespaces, app: app, descriptors: descriptors)
        }
        for fd in [control, output, diagnostics] + (initChannel.map { [$0] } ?? []) {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            keep.insert(fd)
        }
        return SpawnedProcess(
            pid: started!.pid, pidfd: started!.pidfd, control: control, output: output, diagnostics: diagnostics,
            initChannel: initChannel, startedInGroup: startedInGroup, configured: configured, templateFailure: templateFailure)
    }

    /// apphost_spawn: the exec launcher.
    private static func exec(
        _ executable: String, _ arguments: [String], environment: [String], namespaces: Int32, app: [String]?, descriptors: [Int32]
    ) throws(SystemError) -> (pid: pid_t, pidfd: Int32) {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        let appArgv = (app ?? []).map { strdup($0) } + [nil]
        defer {
            (argv + envp + appArgv).forEach { free($0) }
        }
        var pidfd: Int32 = -1
        let pid = apphost_spawn(
            executable, argv, envp, descriptors, Int32(descriptors.count), namespaces, app == nil ? nil : appArgv[0], appArgv, &pidfd)
        guard pid > 0 else { throw SystemError("spawn \(executable)", errno: errno) }
        return (pid, pidfd)
    }
}
