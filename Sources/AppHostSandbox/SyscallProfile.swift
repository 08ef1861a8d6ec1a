/// What an app may ask the kernel for (docs/sandbox.md, "The sandbox"): a base allow-list that the Swift
/// runtime, Foundation and Dispatch need, widened by the entitlement groups its bundle declares.
/// Everything else is refused with EPERM and reported; a few dangerous calls end the app.
///
/// The base list was measured with `strace -f` over the example apps and the probe fixture, then
/// checked by running every life-cycle test under the filter with no violation reported.
package struct SyscallProfile: Sendable, Equatable {
    /// The entitlements an Info.plist can declare under `AppHostEntitlements`. The network keys
    /// are the macOS App Sandbox's, so app authors recognise them.
    package enum Entitlement: String, Sendable, CaseIterable, Codable {
        /// Outgoing connections: TCP/UDP/Unix sockets, name resolution (a NETLINK_ROUTE socket).
        case networkClient = "com.apple.security.network.client"
        /// Listening sockets: bind, listen, accept.
        case networkServer = "com.apple.security.network.server"
        /// fork, exec and waiting for children. Children inherit the whole sandbox.
        case processSpawn = "apphost.process-spawn"
    }

    /// One condition on a syscall argument: `(argument & mask) == value`. Arguments the kernel
    /// reads as 32-bit (ints, ioctl requests) are compared on their low 32 bits only, so that
    /// setting high bits cannot slip a request past a rule.
    package struct ArgumentTest: Sendable, Equatable {
        package var index: UInt32
        package var mask: UInt64
        package var value: UInt64

        package static func low32(_ index: UInt32, equals value: UInt64) -> ArgumentTest {
            ArgumentTest(index: index, mask: 0xFFFF_FFFF, value: value & 0xFFFF_FFFF)
        }

        package static func masked(_ index: UInt32, _ mask: UInt64, equals value: UInt64) -> ArgumentTest {
            ArgumentTest(index: index, mask: mask, value: value)
        }
    }

    /// A syscall allowed when every test holds (no tests: always). Several rules for one syscall
    /// allow it when any of them holds.
    package struct Rule: Sendable, Equatable {
        package var syscall: String
        package var tests: [ArgumentTest]

        package init(_ syscall: String, _ tests: [ArgumentTest] = []) {
            self.syscall = syscall
            self.tests = tests
        }
    }

    package var entitlements: Set<Entitlement>
    /// The app's own pid: the only process it may signal without the spawn entitlement.
    package var ownPID: Int32

    package init(entitlements: Set<Entitlement>, ownPID: Int32) {
        self.entitlements = entitlements
        self.ownPID = ownPID
    }

    /// Answered with ENOSYS, not EPERM, and not reported: glibc creates threads with clone3 and
    /// falls back to clone (whose flags a filter can read) only on ENOSYS.
    /// openat2 likewise: its mode sits in a struct the filter cannot read, and glibc's open does
    /// not use it (callers that do fall back to openat).
    package static let unimplemented = ["clone3", "openat2"]

    /// Every allowed syscall with its argument tests.
    package var rules: [Rule] {
        var rules = Self.base.map { Rule($0) }
        rules += Self.argumentRules(ownPID: ownPID)
        if entitlements.contains(.processSpawn) {
            rules += Self.processSpawn.map { Rule($0) }
            // Any clone that creates no namespace; kill and tgkill of any process (a per-app
            // uid keeps the host and other apps out of reach).
            rules.append(Rule("clone", [.masked(0, Self.namespaceFlags, equals: 0)]))
            rules += ["kill", "tgkill"].map { Rule($0) }
        } else {
            // Threads only: CLONE_THREAD set, no namespace flag.
            rules.append(Rule("clone", [.masked(0, Self.namespaceFlags | Self.cloneThread, equals: Self.cloneThread)]))
        }
        if !entitlements.isDisjoint(with: [.networkClient, .networkServer]) {
            for family in [Self.afUnix, Self.afInet, Self.afInet6] {
                rules.append(Rule("socket", [.low32(0, equals: family)]))
            }
            // getaddrinfo asks the kernel for the machine's addresses on a NETLINK_ROUTE socket.
            rules.append(Rule("socket", [.low32(0, equals: Self.afNetlink), .low32(2, equals: 0)]))
        }
        if entitlements.contains(.networkClient) { rules.append(Rule("connect")) }
        if entitlements.contains(.networkServer) { rules += ["bind", "listen", "accept", "accept4"].map { Rule($0) } }
        return rules
    }

    /// The base allow-list: memory, threads and futexes, files (Landlock decides which), time,
    /// event loops (epoll, eventfd, timerfd), I/O on descriptors the app already holds, and
    /// identity queries.
    package static let base: [String] = [
        // Memory.
        "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync", "mincore", "membarrier",
        // Threads, futexes and scheduling.
        "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
        "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
        "sched_get_priority_max", "sched_get_priority_min", "getpriority",
        "exit", "exit_group", "gettid", "getpid", "getppid", "getpgrp", "getpgid", "getsid",
        // Signals (rt_sigaction has argument rules: no handler for SIGSYS).
        "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigpending",
        "sigaltstack", "restart_syscall", "pause",
        // Time.
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
        "timer_create", "timer_settime", "timer_gettime", "timer_delete", "timer_getoverrun",
        "getitimer", "setitimer", "alarm", "times",
        // Files and directories (Landlock and the per-app user decide which ones).
        "close", "close_range", "read", "write", "readv", "writev",
        "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2", "lseek",
        "fstat", "stat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
        "faccessat2", "readlink", "readlinkat", "getdents64", "getcwd", "chdir", "fchdir",
        "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
        "link", "linkat", "symlink", "symlinkat", "umask",
        "truncate", "ftruncate", "fallocate", "fsync", "fdatasync", "sync_file_range", "fadvise64",
        "utimensat", "futimesat", "utimes", "utime", "copy_file_range", "sendfile", "splice", "tee",
        "flock", "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "memfd_create",
        "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
        "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
        "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
        // Landlock, which only ever narrows what a process may reach: the runner adds the app's
        // rules under this filter, and an app may narrow its own access further.
        "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
        // Event loops and readiness.
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        "poll", "ppoll", "select", "pselect6", "eventfd", "eventfd2",
        "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd", "signalfd4",
        // Sockets the app already holds (the control socket) and socket pairs.
        "socketpair", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
        "shutdown", "getsockname", "getpeername", "getsockopt", "setsockopt",
        // Identity and the machine.
        "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
        "capget", "uname", "sysinfo", "getrusage", "getrlimit", "getrandom", "getcpu",
        "arch_prctl",
    ]

    /// With `processSpawn`: creating, running and waiting for child processes.
    package static let processSpawn: [String] = [
        "fork", "vfork", "execve", "execveat", "wait4", "waitid", "setpgid", "setsid", "pidfd_open",
    ]

    /// The set-user-id and set-group-id mode bits: no app makes such a file, whatever its user
    /// (a set-id copy of a binary would run as the app's user, or as root for a root app).
    static let setIDBits: UInt64 = 0o6000

    /// Syscalls whose arguments decide.
    static func argumentRules(ownPID: Int32) -> [Rule] {
        var rules: [Rule] = []
        // Files and directories are created and their modes changed without set-id bits (the
        // mode argument's index for each call). A directory's set-group-id bit is left alone:
        // the kernel sets it itself inside a group container.
        for (call, index) in [("open", 2), ("creat", 1), ("openat", 3), ("chmod", 1), ("fchmod", 1), ("fchmodat", 2)] {
            rules.append(Rule(call, [.masked(UInt32(index), setIDBits, equals: 0)]))
        }
        for (call, index) in [("mkdir", 1), ("mkdirat", 2)] {
            rules.append(Rule(call, [.masked(UInt32(index), 0o4000, equals: 0)]))
        }
        // ioctl: only the terminal and descriptor queries Foundation makes, compared on the low
        // 32 bits (the kernel reads the request as an unsigned int).
        for request in ioctlRequests.values { rules.append(Rule("ioctl", [.low32(1, equals: request)])) }
        for option in prctlOptions.values { rules.append(Rule("prctl", [.low32(0, equals: option)])) }
        // rt_sigaction for every signal but SIGSYS (31), as masked ranges: 0–15, 16–23, 24–27,
        // 28–29, 30, 32–63, 64. Without a handler, SIGSYS always ends the process.
        for (mask, value): (UInt64, UInt64) in [
            (0xFFFF_FFF0, 0), (0xFFFF_FFF8, 16), (0xFFFF_FFFC, 24), (0xFFFF_FFFE, 28), (0xFFFF_FFFF, 30),
            (0xFFFF_FFE0, 32), (0xFFFF_FFFF, 64),
        ] {
            rules.append(Rule("rt_sigaction", [.masked(0, mask, equals: value)]))
        }
        // Signals to itself only: its own pid, or 0 (its own process group).
        let own = UInt64(UInt32(bitPattern: ownPID))
        rules.append(Rule("kill", [.low32(0, equals: own)]))
        rules.append(Rule("kill", [.low32(0, equals: 0)]))
        rules.append(Rule("tgkill", [.low32(0, equals: own)]))
        // Its own priority and limits, not another process's.
        rules.append(Rule("setpriority", [.low32(0, equals: 0), .low32(1, equals: 0)]))
        rules.append(Rule("prlimit64", [.low32(0, equals: 0)]))
        rules.append(Rule("prlimit64", [.low32(0, equals: own)]))
        return rules
    }

    /// ioctl requests allowed to every app: queries, and a descriptor's own flags. SIOCOUTQ
    /// (TIOCOUTQ on a terminal) is what libcurl asks of its sockets on every request an app's
    /// FoundationNetworking makes: refused, a networking app was reported (and, with
    /// --maximum-violations, ended) for doing nothing wrong.
    package static let ioctlRequests: [String: UInt64] = [
        "TCGETS": 0x5401, "TIOCGWINSZ": 0x5413, "TIOCGPGRP": 0x540F, "FIONREAD": 0x541B,
        "FIONBIO": 0x5421, "FIONCLEX": 0x5450, "FIOCLEX": 0x5451, "SIOCOUTQ": 0x5411,
    ]

    /// prctl options allowed to every app: naming threads and reading its own settings.
    package static let prctlOptions: [String: UInt64] = [
        "PR_GET_PDEATHSIG": 2, "PR_GET_DUMPABLE": 3, "PR_GET_KEEPCAPS": 7, "PR_SET_NAME": 15,
        "PR_GET_NAME": 16, "PR_GET_SECCOMP": 21, "PR_CAPBSET_READ": 23, "PR_GET_SECUREBITS": 27,
        "PR_GET_TIMERSLACK": 30, "PR_GET_NO_NEW_PRIVS": 39, "PR_SET_VMA": 0x5356_4D41,
    ]

    static let cloneThread: UInt64 = 0x0001_0000
    /// CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
    /// CLONE_NEWNET.
    package static let namespaceFlags: UInt64 = 0x0002_0000 | 0x0200_0000 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000
    static let afUnix: UInt64 = 1
    static let afInet: UInt64 = 2
    static let afInet6: UInt64 = 10
    static let afNetlink: UInt64 = 16

    /// Calls that end the app by SIGSYS instead of failing with EPERM: they are never part of
    /// an ordinary app, and trying one is an attack or a serious bug.
    package static let dangerous: Set<String> = [
        "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
        "mount", "umount2", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
        "mount_setattr", "pivot_root", "chroot", "kexec_load", "kexec_file_load", "bpf", "setns",
        "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
        "reboot", "swapon", "swapoff", "iopl", "ioperm", "acct", "settimeofday", "clock_settime",
        "clock_adjtime", "adjtimex", "open_by_handle_at", "name_to_handle_at", "perf_event_open",
        "userfaultfd", "quotactl", "syslog", "lookup_dcookie", "kcmp",
    ]

    /// Whether a refused call is one of the dangerous ones: listed, or creating namespaces
    /// (unshare or clone with a CLONE_NEW* flag).
    package static func isDangerous(_ name: String, arguments: [UInt64]) -> Bool {
        if dangerous.contains(name) { return true }
        if name == "unshare" || name == "clone" { return (arguments.first ?? 0) & namespaceFlags != 0 }
        return false
    }

    /// A readable account of a refused call's first argument, where it says what was tried:
    /// `socket(AF_INET)`, `clone(CLONE_NEWUSER|…)`, `ioctl(0x5412)`.
    package static func describe(_ name: String, arguments: [UInt64]) -> String {
        let first = arguments.first ?? 0
        switch name {
        case "socket", "socketpair":
            let families: [UInt64: String] = [1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET"]
            return "\(name)(\(families[first & 0xFFFF_FFFF] ?? "family \(first & 0xFFFF_FFFF)"))"
        case "ioctl":
            let request = arguments.count > 1 ? arguments[1] : 0
            return "ioctl(0x\(String(request, radix: 16)))"
        case "prctl":
            return "prctl(\(first & 0xFFFF_FFFF))"
        case "kill", "tgkill", "tkill":
            return "\(name)(\(Int32(truncatingIfNeeded: first)))"
        case "clone", "unshare":
            let names: [(UInt64, String)] = [
                (0x0002_0000, "CLONE_NEWNS"), (0x0200_0000, "CLONE_NEWCGROUP"), (0x0400_0000, "CLONE_NEWUTS"),
                (0x0800_0000, "CLONE_NEWIPC"), (0x1000_0000, "CLONE_NEWUSER"), (0x2000_0000, "CLONE_NEWPID"),
                (0x4000_0000, "CLONE_NEWNET"), (0x0001_0000, "CLONE_THREAD"),
            ]
            let set = names.filter { first & $0.0 != 0 }.map(\.1)
            return "\(name)(\(set.isEmpty ? "0x" + String(first, radix: 16) : set.joined(separator: "|")))"
        case "rt_sigaction":
            return "rt_sigaction(\(first & 0xFFFF_FFFF))"
        case "open", "creat", "openat", "chmod", "fchmod", "fchmodat", "mkdir", "mkdirat":
            // Refused only for its mode: say which set-id bit it asked for.
            let index = ["open": 2, "creat": 1, "openat": 3, "chmod": 1, "fchmod": 1, "fchmodat": 2, "mkdir": 1, "mkdirat": 2][name]!
            let mode = index < arguments.count ? arguments[index] : 0
            return "\(name)(mode 0\(String(mode & 0o7777, radix: 8)))"
        default:
            return name
        }
    }
}
