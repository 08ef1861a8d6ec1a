import AppHostKit
import Foundation
import ProbeSyscalls

// What the Probe tries against its sandbox: ProbeBehavior `sandboxProbes` lists probes by name,
// run in order in didFinishLaunching; each records "probe NAME: RESULT" in lifecycle.log, the
// result being "ok" or the errno's name the kernel answered.

extension AppDelegate {
    func runSandboxProbes(_ names: [String], behavior: [String: Any]) {
        for name in names {
            let outcome = self.outcome(of: name, behavior: behavior)
            record("probe \(name): \(outcome)")
        }
    }

    private func outcome(of name: String, behavior: [String: Any]) -> String {
        let documents = Application.shared.containerURL.appendingPathComponent("Documents").path
        switch name {
        case "socket-inet": return describe(probe_socket(AF_INET, Int32(SOCK_STREAM.rawValue)))
        case "socket-unix": return describe(probe_socket(AF_UNIX, Int32(SOCK_STREAM.rawValue)))
        case "listen": return describe(probe_listen())
        case "ptrace-host": return describe(probe_ptrace_attach(getppid()))
        case "mount": return describe(probe_mount())
        case "unshare-user": return describe(probe_unshare(0x1000_0000))
        case "bpf": return describe(probe_bpf())
        // getpid through the i386 entry (its number 20 there) and through x32 (39 | 0x40000000).
        case "int80-getpid": return describe(probe_int80(20))
        case "x32-getpid": return describe(probe_x32(39))
        // TIOCSTI pushes input into a terminal; allowed, the kernel would answer ENOTTY on a pipe.
        case "ioctl-tiocsti": return describe(probe_ioctl(1, 0x5412))
        case "ioctl-tiocsti-high-bits": return describe(probe_ioctl(1, 0xFFFF_FFFF_0000_0000 | 0x5412))
        case "ioctl-fionread": return describe(probe_ioctl(3, 0x541B))
        case "ioctl-siocoutq": return describe(probe_ioctl(3, 0x5411))
        case "fork": return describe(probe_fork())
        case "exec": return describe(probe_execve("/bin/true"))
        case "thread": return describe(probe_thread())
        case "kill-host": return describe(probe_kill(getppid(), SIGTERM))
        case "kill-other":
            let target = (try? String(contentsOfFile: documents + "/target-pid", encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            return describe(probe_kill(target, SIGTERM))
        // Metadata of files outside the container (`targets`), which Landlock does not govern:
        // the outcome for each target, in order.
        case "chmod-targets": return targets(behavior) { probe_chmod($0, 0o777) }
        case "chown-targets": return targets(behavior) { probe_chown($0, getuid(), getgid()) }
        case "touch-targets": return targets(behavior) { probe_touch($0) }
        case "xattr-targets": return targets(behavior) { probe_setxattr($0) }
        case "connect-socket": return describe(probe_connect_unix(behavior["socket"] as? String ?? "/nonexistent"))
        case "spawn-orphans": return probe_spawn_orphans(behavior["orphanName"] as? String ?? "probe-orphan") > 0 ? "ok" : "failed"
        case "child-reads-own-proc":
            let result = probe_child_reads_own_proc()
            return result == 0 ? "ok" : describe(-abs(result))
        case "read-host-proc": return describe(probe_open("/proc/\(behavior["hostPID"] as? Int ?? 1)/status", O_RDONLY))
        // The directory holding its own cgroup v1 pids group: every app's group of this host.
        case "list-cgroup-siblings":
            let own = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))?.split(separator: "\n")
                .first { $0.contains(":pids:") }.map { String($0.split(separator: ":", maxSplits: 2)[2]) }
            guard let own else { return "no pids group" }
            let parent = "/sys/fs/cgroup/pids" + (own as NSString).deletingLastPathComponent
            guard let directory = opendir(parent) else { return describe(-errno) }
            closedir(directory)
            return "ok"
        case "write-outside": return describe(probe_open("/tmp/apphost-probe-outside", O_WRONLY | O_CREAT))
        case "read-shadow": return describe(probe_open("/etc/shadow", O_RDONLY))
        case "read-other": return describe(probe_open(behavior["otherFile"] as? String ?? "/nonexistent", O_RDONLY))
        case "write-documents": return describe(probe_open(documents + "/probe-write", O_WRONLY | O_CREAT))
        // A set-user-id file of the app's own, made by chmod and by open's mode; a plain chmod.
        case "chmod-setuid": return describe(probe_chmod_new(documents + "/setuid-chmod", 0o4755))
        case "open-setuid": return describe(probe_open_mode(documents + "/setuid-open", O_WRONLY | O_CREAT, 0o4755))
        case "chmod-plain": return describe(probe_chmod_new(documents + "/plain", 0o755))
        case "write-group":
            guard let group = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: behavior["group"] as? String ?? "") else {
                return "no group container"
            }
            return describe(probe_open(group.appendingPathComponent("probe-group").path, O_WRONLY | O_CREAT))
        case "setuid": return runSetuidBinary(behavior["setuidBinary"] as? String ?? "")
        case "fork-bomb":
            var error: Int32 = 0
            let count = probe_fork_bomb(&error)
            return "\(count) children, then \(describe(-error))"
        // Look-ups every app may make (UserDefaults makes the first): the answer does not
        // matter (the app's user is in no passwd file), only that nothing is refused.
        case "look-up-user":
            _ = getpwuid(getuid())
            return "done"
        case "look-up-group":
            _ = getgrgid(getgid())
            return "done"
        case "user-defaults":
            UserDefaults.standard.set(1, forKey: "probe")
            return UserDefaults.standard.integer(forKey: "probe") == 1 ? "done" : "not kept"
        // The host's control socket in `controlDirectory`: its key read, then `run ps` sent
        // with a made-up key; "key ERRNO, answer FIRST LINE".
        case "drive-host": return driveHost(behavior["controlDirectory"] as? String ?? "")
        default: return "unknown probe"
        }
    }

    private func driveHost(_ directory: String) -> String {
        let key = open(directory + "/host.key", O_RDONLY | O_CLOEXEC)
        let keyOutcome = key >= 0 ? "ok" : describe(-errno)
        if key >= 0 { close(key) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "key \(keyOutcome), socket \(describe(-errno))" }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((directory + "/host.sock").utf8.prefix(107))
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in for (index, byte) in path.enumerated() { bytes[index] = byte } }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return "key \(keyOutcome), connect \(describe(-errno))" }
        let request = Array((String(repeating: "0", count: 64) + " run ps\n").utf8)
        _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var answer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &answer, answer.count)
        let first = String(decoding: answer.prefix(max(0, count)), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        return "key \(keyOutcome), answer \(first)"
    }

    /// Runs a set-user-id-root binary (a copy of id(1)) and returns what it printed. Plain
    /// fork and exec: Foundation's Process waits through a CFSocket the sandbox refuses (no
    /// network entitlement), and then sometimes never returns.
    private func runSetuidBinary(_ path: String) -> String {
        var output = [CChar](repeating: 0, count: 4096)
        let status = probe_run_capturing(path, &output, Int32(output.count))
        guard status >= 0 else { return "cannot run: \(describe(status))" }
        let text = String(cString: output)
        return "output " + text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func targets(_ behavior: [String: Any], _ probe: (String) -> Int32) -> String {
        (behavior["targets"] as? [String] ?? []).map { describe(probe($0)) }.joined(separator: ",")
    }

    private func describe(_ result: Int32) -> String {
        guard result < 0 else { return "ok" }
        let names: [Int32: String] = [
            EPERM: "EPERM", EACCES: "EACCES", ENOSYS: "ENOSYS", EAGAIN: "EAGAIN", ENOTTY: "ENOTTY",
            ENOENT: "ENOENT", EINVAL: "EINVAL", ESRCH: "ESRCH", EROFS: "EROFS",
        ]
        return names[-result] ?? "errno \(-result)"
    }
}
