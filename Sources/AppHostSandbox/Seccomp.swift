#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
import CAppHostShims
import CSeccomp

/// Loading a `SyscallProfile` into the app process with libseccomp, and reading the refusals it
/// reports in the supervisor.
package enum Seccomp {
    /// Whether this kernel and libseccomp give user notification (libseccomp API level 5), and
    /// with it per-violation reports. Without it refusals are enforced but silent.
    package static var notificationAvailable: Bool { seccomp_api_get() >= 5 }

    /// A compiled filter: classic BPF instructions for this architecture, ready to install.
    package struct Program: Sendable, Equatable {
        package var instructions: [UInt8]
        /// Whether refusals go to a user-notification listener (else EPERM, and dangerous calls
        /// are killed by the kernel).
        package var notifies: Bool

        package init(instructions: [UInt8], notifies: Bool) {
            self.instructions = instructions
            self.notifies = notifies
        }
    }

    /// Compiles the profile with libseccomp. The supervisor does this while the app process
    /// starts, so the app only installs the result: compiling takes about a millisecond, most
    /// of the confinement step's budget.
    package static func compile(_ profile: SyscallProfile) throws(SystemError) -> Program {
        let notify = notificationAvailable
        guard let context = seccomp_init(notify ? apphost_scmp_act_notify() : apphost_scmp_act_errno(UInt16(EPERM))) else {
            throw SystemError("seccomp_init", errno: ENOMEM)
        }
        defer { seccomp_release(context) }
        // A system call of another ABI — `int 0x80` (i386) or x32 — is not the native ABI the
        // rules speak of. libseccomp's default for it kills only the calling thread, silently;
        // here it goes to the supervisor like any refusal (which ends the app and names the
        // ABI), or, without a listener, kills the whole app.
        try negativeErrno("seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH)", seccomp_attr_set(
            context, SCMP_FLTATR_ACT_BADARCH, notify ? apphost_scmp_act_notify() : apphost_scmp_act_kill_process()))
        // A binary tree over the syscall numbers rather than one test after another: a call is
        // decided in about ten tests, not up to one per allowed call, which the kernel also pays
        // once per syscall number when it installs the filter (its cache of always-allowed calls).
        try negativeErrno("seccomp_attr_set(SCMP_FLTATR_CTL_OPTIMIZE)", seccomp_attr_set(context, SCMP_FLTATR_CTL_OPTIMIZE, 2))
        for rule in profile.rules {
            let number = seccomp_syscall_resolve_name(rule.syscall)
            guard number != __NR_SCMP_ERROR else { continue }  // not on this architecture
            try add(context, apphost_scmp_act_allow(), number, rule.tests, rule.syscall)
        }
        for name in SyscallProfile.unimplemented {
            try add(context, apphost_scmp_act_errno(UInt16(ENOSYS)), seccomp_syscall_resolve_name(name), [], name)
        }
        if !notify {
            // Nobody to decide: the kernel kills dangerous calls itself.
            for name in SyscallProfile.dangerous {
                let number = seccomp_syscall_resolve_name(name)
                guard number != __NR_SCMP_ERROR else { continue }
                try add(context, apphost_scmp_act_kill_process(), number, [], name)
            }
            var flag: UInt64 = 1
            while flag <= SyscallProfile.namespaceFlags {
                if flag & SyscallProfile.namespaceFlags != 0 {
                    for name in ["clone", "unshare"] {
                        try add(context, apphost_scmp_act_kill_process(), seccomp_syscall_resolve_name(name), [.masked(0, flag, equals: flag)], name)
                    }
                }
                flag <<= 1
            }
        }
        // Exported through a pipe (libseccomp 2.5 writes BPF to a descriptor). The kernel takes
        // at most 4096 instructions, 32 KiB, so any valid filter fits in the pipe's 64 KiB
        // before it is read.
        var fds: [Int32] = [-1, -1]
        try valueOrErrno("pipe") { pipe(&fds) }
        defer { close(fds[0]) }
        let exported = seccomp_export_bpf(context, fds[1])
        close(fds[1])
        try negativeErrno("seccomp_export_bpf", exported)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while case .bytes(let count) = readSome(fds[0], into: &buffer) { bytes += buffer[0..<count] }
        return Program(instructions: bytes, notifies: notify)
    }

    /// Installs a compiled filter on every thread of this process. Returns the user-notification
    /// listener, which the caller must hand to the supervisor and close, or nil when the program
    /// does not notify. NO_NEW_PRIVS must already be set.
    package static func install(_ program: Program) throws(SystemError) -> Int32? {
        let count = program.instructions.count / 8
        guard count > 0, count <= Int(UInt16.max), program.instructions.count % 8 == 0 else {
            throw SystemError("seccomp: a filter of \(program.instructions.count) bytes", errno: EINVAL)
        }
        let result = try valueOrErrno("seccomp(SECCOMP_SET_MODE_FILTER)") {
            program.instructions.withUnsafeBytes { apphost_seccomp_install($0.baseAddress, UInt16(count), program.notifies ? 1 : 0) }
        }
        return program.notifies ? result : nil
    }

    private static func add(
        _ context: scmp_filter_ctx, _ action: UInt32, _ number: Int32, _ tests: [SyscallProfile.ArgumentTest], _ name: String
    ) throws(SystemError) {
        let comparisons = tests.map { scmp_arg_cmp(arg: $0.index, op: SCMP_CMP_MASKED_EQ, datum_a: $0.mask, datum_b: $0.value) }
        try negativeErrno("seccomp_rule_add(\(name))", seccomp_rule_add_array(context, action, number, UInt32(comparisons.count), comparisons))
    }

    /// The x32 ABI's system call numbers on x86_64 carry this bit (__X32_SYSCALL_BIT).
    static let x32Bit: Int32 = 0x4000_0000

    /// The ABI of a call the kernel reported, when it is not this architecture's native one:
    /// an i386 call (`int 0x80`) on x86_64, or an x32 call.
    static func foreignABI(arch: UInt32, number: Int32) -> String? {
        if arch != seccomp_arch_native() {
            return arch == apphost_scmp_arch_x86() ? "int 0x80 (i386)" : "another ABI (audit arch 0x\(String(arch, radix: 16)))"
        }
        if arch == apphost_scmp_arch_x86_64(), number & x32Bit != 0 { return "x32" }
        return nil
    }

    /// The name of a syscall number on this architecture, e.g. "socket" for 41.
    package static func name(of number: Int32) -> String {
        guard let name = seccomp_syscall_resolve_num_arch(UInt32(SCMP_ARCH_NATIVE), number) else { return "syscall \(number)" }
        defer { free(name) }
        return String(cString: name)
    }
}

/// The supervisor's end of an app's seccomp listener: each refused call waits in the kernel until
/// the supervisor answers it. Never approves a call (a notification that approves could be raced): it only refuses,
/// and records what was refused.
package final class SyscallListener {
    /// A call the filter did not allow, as the kernel reports it.
    package struct Call: Sendable {
        package var id: UInt64
        package var name: String
        package var arguments: [UInt64]
        /// The ABI it was made through, when not the native one: "int 0x80 (i386)", "x32".
        package var foreignABI: String?
        /// "socket(AF_INET)", "ioctl(0x5412)", "int 0x80 (i386) system call 20", …
        package var description: String {
            foreignABI.map { "\($0) system call \(name)" } ?? SyscallProfile.describe(name, arguments: arguments)
        }
        /// A call through another ABI is dangerous whatever it is: it slips past the native rules.
        package var isDangerous: Bool { foreignABI != nil || SyscallProfile.isDangerous(name, arguments: arguments) }
    }

    package let fd: Int32
    private let request: UnsafeMutablePointer<seccomp_notif>
    private let response: UnsafeMutablePointer<seccomp_notif_resp>
    private let requestSize: Int

    /// Takes ownership of `fd`.
    package init?(fd: Int32) {
        var request: UnsafeMutablePointer<seccomp_notif>?
        var response: UnsafeMutablePointer<seccomp_notif_resp>?
        guard seccomp_notify_alloc(&request, &response) == 0, let request, let response else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.request = request
        self.response = response
        // The kernel refuses a receive buffer that is not zeroed.
        requestSize = MemoryLayout<seccomp_notif>.size
    }

    deinit {
        seccomp_notify_free(request, response)
        close(fd)
    }

    /// The next refused call, or nil when none is waiting (or it was withdrawn: the thread was
    /// interrupted by a signal, or the app ended). Never blocks: receiving blocks in the kernel
    /// when nothing is pending, so readiness is checked first.
    package func next() -> Call? {
        var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, 0) == 1, poll.revents & Int16(POLLIN) != 0 else { return nil }
        memset(request, 0, requestSize)
        guard seccomp_notify_receive(fd, request) == 0 else { return nil }
        let data = request.pointee.data
        let arguments = withUnsafeBytes(of: data.args) { Array($0.bindMemory(to: UInt64.self)) }
        if let abi = Seccomp.foreignABI(arch: data.arch, number: data.nr) {
            return Call(id: request.pointee.id, name: String(data.nr & ~Seccomp.x32Bit), arguments: arguments, foreignABI: abi)
        }
        return Call(id: request.pointee.id, name: Seccomp.name(of: data.nr), arguments: arguments)
    }

    /// Answers a call with `-error` (EPERM): the app sees the call fail.
    package func refuse(_ call: Call, error: Int32 = EPERM) {
        response.pointee.id = call.id
        response.pointee.val = 0
        response.pointee.error = -error
        response.pointee.flags = 0
        _ = seccomp_notify_respond(fd, response)
    }
}
