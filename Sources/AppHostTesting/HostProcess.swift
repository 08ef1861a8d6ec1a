#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostRuntime
import AppHostSystem
import CAppHostShims

/// One `apphost launch --json` process started by a test: its pid and pidfd, the write end of its
/// standard input, and the threads that read what it says into an `EventLog`.
///
/// Its standard input is the test process's lifeline: nothing is written to it, and the host
/// takes its end — the test process closing it, exiting or being killed, since the kernel closes
/// the descriptor then — as `quit`: it terminates its apps and exits. Every descriptor is made
/// close-on-exec, so no other child of the test process holds the lifeline open.
///
/// Its standard output and error are files in the host's private directory, read as they grow,
/// not pipes to the test process: a host whose test process has died must still be able to
/// print while it ends its apps (a pipe with no reader would kill it with SIGPIPE, and its apps
/// with it, without their reports).
final class HostProcess: Sendable {
    let pid: pid_t
    private let pidfd: Int32
    private let lifeline: Mutex<Int32>
    private let log: EventLog
    /// Signalled once the process has been reaped and its output read to the end.
    private let ended = DispatchSemaphore(value: 0)

    /// Starts `executable arguments…` with `environment`, its standard output and error read into
    /// `log`. The process leads a process group of its own, with every signal at its default
    /// action and none blocked (a test runner's threads may block some).
    init(executable: String, arguments: [String], environment: [String: String], output outputFile: URL, errors errorFile: URL, log: EventLog) throws(TestHostError) {
        self.log = log
        var input: [Int32] = [-1, -1]
        // [read, write] of each file, like a pipe's ends.
        var output: [Int32] = [-1, -1]
        var errors: [Int32] = [-1, -1]
        do {
            try valueOrErrno("pipe2") { apphost_pipe_cloexec(&input) }
            for (file, fds) in [(outputFile, 0), (errorFile, 1)] {
                let write = try valueOrErrno("open \(file.path)") { open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600) }
                if fds == 0 { output[1] = write } else { errors[1] = write }
                let read = try valueOrErrno("open \(file.path)") { open(file.path, O_RDONLY | O_CLOEXEC) }
                if fds == 0 { output[0] = read } else { errors[0] = read }
            }
        } catch {
            for fd in input + output + errors where fd >= 0 { closeIgnoringErrors(fd) }
            throw TestHostError("cannot start \(executable): \(error)", code: .setupFailed)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        _ = apphost_spawn_close_from(&actions, 3)
        // Its own process group: a Ctrl-C meant for `swift test` reaches the host through its
        // lifeline (the test process ends), not twice.
        let pid: pid_t
        do {
            pid = try spawnWithCleanSignals(
                executable, arguments, environment: environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" },
                fileActions: &actions, ownProcessGroup: true)
        } catch {
            for fd in input + output + errors { closeIgnoringErrors(fd) }
            throw TestHostError("cannot start \(executable): \(errnoText(error.errno))", code: .setupFailed)
        }
        for fd in [input[0], output[1], errors[1]] { closeIgnoringErrors(fd) }
        // The pidfd says when the host has ended, without racing a reused pid.
        let pidfd = apphost_pidfd_open(pid)
        guard pidfd >= 0 else {
            let error = errno
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            for fd in [input[1], output[0], errors[0]] { closeIgnoringErrors(fd) }
            throw TestHostError("pidfd_open: \(errnoText(error)) (apphost needs Linux 5.3 or later)", code: .setupFailed)
        }
        self.pid = pid
        self.pidfd = pidfd
        lifeline = Mutex(input[1])

        // The host's end is known once it has been reaped and its output read to the end.
        let group = DispatchGroup()
        group.enter()
        Thread.detachNewThread { [log, pidfd, output, errors] in
            var reader = OutputReader(output: output[0], errors: errors[0], log: log)
            reader.follow(until: pidfd)
            closeIgnoringErrors(output[0])
            closeIgnoringErrors(errors[0])
            group.leave()
        }
        group.enter()
        let exit = Mutex<HostExit?>(nil)
        Thread.detachNewThread { [pid, pidfd] in
            exit.withLock { $0 = Self.reap(pid: pid, pidfd: pidfd) }
            group.leave()
        }
        group.notify(queue: .global()) { [log, ended] in
            log.finish(exit.withLock { $0 } ?? HostExit(status: nil, signal: nil))
            ended.signal()
        }
    }

    deinit {
        closeLifeline()
        closeIgnoringErrors(pidfd)
    }

    /// Asks the host to quit: closes its standard input. Safe to call more than once.
    func closeLifeline() {
        let fd = lifeline.withLock { fd -> Int32 in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { closeIgnoringErrors(fd) }
    }

    /// Sends `signal` to the host, through its pidfd (never to a process that reused its pid).
    func send(_ signal: Int32) {
        _ = apphost_pidfd_send_signal(pidfd, signal)
    }

    /// Waits until the host has ended and its output is read; false if `timeout` passed first.
    func waitForEnd(timeout: Duration) -> Bool {
        let nanoseconds = Int(min(timeout, .seconds(86_400)).components.seconds * 1_000_000_000)
            + Int(timeout.components.attoseconds / 1_000_000_000)
        guard ended.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return false }
        ended.signal()  // later waits return at once
        return true
    }

    /// Async `waitForEnd`, off the cooperative threads.
    func ended(within timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in continuation.resume(returning: waitForEnd(timeout: timeout)) }
        }
    }

    // MARK: Threads

    /// Waits for the host to end and reaps it.
    private static func reap(pid: pid_t, pidfd: Int32) -> HostExit {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                // Someone else reaped it (a test harness reaping every child): its pidfd still
                // says when it ended, not how.
                var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                while poll(&entry, 1, -1) == -1 && errno == EINTR {}
                return HostExit(status: nil, signal: nil)
            }
        }
        if status & 0x7f == 0 { return HostExit(status: (status >> 8) & 0xff, signal: nil) }
        return HostExit(status: nil, signal: status & 0x7f)
    }
}

/// Follows the host's standard output (JSON event lines) and error (kept as text) as their
/// files grow, woken by inotify (or every 20 ms where there is none), until the host has ended
/// and both are read to their end.
private struct OutputReader {
    let output: Int32
    let errors: Int32
    let log: EventLog
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private let decoder = JSONDecoder()

    init(output: Int32, errors: Int32, log: EventLog) {
        self.output = output
        self.errors = errors
        self.log = log
    }

    mutating func follow(until pidfd: Int32) {
        let notify = inotify_init1(Int32(IN_CLOEXEC))
        defer { if notify >= 0 { closeIgnoringErrors(notify) } }
        if notify >= 0 {
            for fd in [output, errors] {
                _ = inotify_add_watch(notify, "/proc/self/fd/\(fd)", UInt32(IN_MODIFY))
            }
        }
        while true {
            drain()
            var entries = [pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0), pollfd(fd: notify, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&entries, notify >= 0 ? 2 : 1, notify >= 0 ? -1 : 20)
            if ready < 0 && errno != EINTR { break }
            if entries[0].revents != 0 { break }
            if entries[1].revents != 0 {
                // The events only wake us: what changed is read from the files.
                var events = [UInt8](repeating: 0, count: 4096)
                _ = events.withUnsafeMutableBytes { read(notify, $0.baseAddress, $0.count) }
            }
        }
        drain()  // what it wrote before it ended
    }

    /// Reads both files to their current end.
    private mutating func drain() {
        while case .bytes(let count) = readSome(errors, into: &buffer) {
            log.appendStandardError(buffer[0..<count])
        }
        while case .bytes(let count) = readSome(output, into: &buffer) {
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[..<newline]
                if let event = try? decoder.decode(HostEvent.self, from: Data(line)) {
                    log.append(event)
                } else if !line.isEmpty {
                    log.appendUnreadable(String(decoding: line, as: UTF8.self))
                }
                pending.removeSubrange(...newline)
            }
        }
    }
}
