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

    /// Runs `body` on the spawn thread and waits for its result.
    func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result?
        condition.lock()
        jobs.append {
            result = body()
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        return result!
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
}

enum AppProcessSpawner {
    /// Spawns `executable arguments…` with the control socket on fd 3, stdout and stderr on a
    /// pipe, stdin on /dev/null, no other descriptors, default signal handling, an empty signal
    /// mask and its own process group (so the terminal's Ctrl-C reaches only the host, which ends
    /// the apps as sequence 7 says).
    static func spawn(executable: String, arguments: [String], environment: [String]) throws(SystemError) -> SpawnedProcess {
        var sockets: [Int32] = [-1, -1]
        try valueOrErrno("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &sockets) }
        var pipeFDs: [Int32] = [-1, -1]
        do {
            try valueOrErrno("pipe2") { apphost_pipe_cloexec(&pipeFDs) }
        } catch {
            sockets.forEach(closeIgnoringErrors)
            throw error
        }
        defer {
            closeIgnoringErrors(sockets[1])
            closeIgnoringErrors(pipeFDs[1])
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, sockets[1], 3)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        apphost_spawn_close_from(&actions, 4)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in 1..<32 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&defaults, Int32(signal)) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            closeIgnoringErrors(sockets[0])
            closeIgnoringErrors(pipeFDs[0])
            throw SystemError("posix_spawn \(executable)", errno: result)
        }
        let pidfd = apphost_pidfd_open(pid)
        guard pidfd >= 0 else {
            let error = errno
            Glibc.kill(pid, SIGKILL)
            closeIgnoringErrors(sockets[0])
            closeIgnoringErrors(pipeFDs[0])
            throw SystemError("pidfd_open", errno: error)
        }
        _ = fcntl(sockets[0], F_SETFL, fcntl(sockets[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(pipeFDs[0], F_SETFL, fcntl(pipeFDs[0], F_GETFL) | O_NONBLOCK)
        return SpawnedProcess(pid: pid, pidfd: pidfd, control: sockets[0], output: pipeFDs[0])
    }
}
