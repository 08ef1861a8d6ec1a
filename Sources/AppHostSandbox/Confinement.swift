#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
import CAppHostShims
import CCap

/// What the runner does to its own process before any app code runs (docs/sandbox.md, "The sandbox"), in
/// this order: bounding and ambient capabilities dropped; the per-app user; the capabilities
/// the app keeps; NO_NEW_PRIVS; resource limits; seccomp, none of whose steps needs the file
/// system the app will see (`confineProcess`, done while the namespace's init isolates it and
/// makes the app's Landlock ruleset); then Landlock (`restrictFiles`, or in namespaces
/// `Landlock.enforce` of the init's ruleset), whose calls the app's filter allows.
package enum Confinement {
    /// Everything the runner needs to confine an app process.
    package struct Plan: Sendable, Equatable {
        /// Capability names the app keeps (requested by its bundle, allowed by the host).
        package var capabilities: [String] = []
        /// RLIMIT_NOFILE.
        package var openFiles: UInt64 = 1024
        /// RLIMIT_NPROC, where no pids cgroup limits the app (it counts the app's uid's threads).
        package var processes: UInt64?
        /// The app's own user, on a root host.
        package var user: User?
        /// The host's pid: the parent-death signal is armed again after the user switch (nil in
        /// a PID namespace of the app's own, which ends with its init).
        package var parentPID: Int32?
        /// Landlock, without namespaces: the app's rules (`Landlock.appRules`); the system's
        /// are added here. (In namespaces its init makes the app's ruleset.)
        package var fileRules: [Landlock.Rule] = []
        package var entitlements: Set<SyscallProfile.Entitlement> = []
        /// The seccomp filter the supervisor compiled for this process; nil: compile it here.
        package var filter: Seccomp.Program?
        /// A Landlock ruleset holding `Landlock.sharedRules` already (a standby's, made before its
        /// launch); nil: every rule is added here.
        package var sharedRules: Landlock.Ruleset?

        package init(parentPID: Int32?) { self.parentPID = parentPID }
    }

    package struct User: Sendable, Equatable {
        package var uid: UInt32
        package var gid: UInt32
        /// The app groups' gids, so their containers are shared by every app of the group.
        package var groups: [UInt32]

        package init(uid: UInt32, gid: UInt32, groups: [UInt32]) {
            self.uid = uid
            self.gid = gid
            self.groups = groups
        }
    }

    /// Confines the process but for its files, in the order above, and returns the seccomp
    /// filter's user-notification listener, to hand to the supervisor (then close), or nil
    /// without user notification. Until the supervisor holds it, a refused call would wait for
    /// an answer that cannot come: what the runner does before it hands it over (waiting for
    /// the namespace's init, `restrictFiles`) makes no such call.
    package static func confineProcess(_ plan: Plan) throws(SystemError) -> Int32? {
        let kept = try values(of: plan.capabilities)
        try Capabilities.dropBoundingAndAmbient(keeping: kept)
        if let user = plan.user {
            if !kept.isEmpty {
                try valueOrErrno("prctl(PR_SET_KEEPCAPS)") { apphost_set_keep_capabilities(1) }
            }
            try valueOrErrno("setresuid(\(user.uid))") { apphost_switch_user(user.uid, user.gid, user.groups.count, user.groups) }
            _ = apphost_set_keep_capabilities(0)
            // A uid change clears the parent-death signal.
            if let parent = plan.parentPID {
                _ = apphost_set_parent_death_signal(SIGKILL)
                if getppid() != parent { _exit(0) }
            }
        }
        try Capabilities.setProcess(to: kept)
        try forbidNewPrivileges()
        try setLimit(RLIMIT_CORE, 0, name: "RLIMIT_CORE")
        try setLimit(RLIMIT_NOFILE, plan.openFiles, name: "RLIMIT_NOFILE")
        if let processes = plan.processes { try setLimit(__rlimit_resource(rawValue: 6) /* RLIMIT_NPROC, GNU-only */, processes, name: "RLIMIT_NPROC") }
        // Group members may write what the app creates in a shared container.
        umask(0o007)
        let filter: Seccomp.Program
        if let compiled = plan.filter {
            filter = compiled
        } else {
            filter = try Seccomp.compile(SyscallProfile(entitlements: plan.entitlements, ownPID: getpid()))
        }
        return try Seccomp.install(filter)
    }

    /// Landlock without namespaces: the system's paths (unless `sharedRules` holds them) and the
    /// plan's `fileRules`. Returns the Landlock ABI that confines the files, 0 where the kernel
    /// has none.
    package static func restrictFiles(_ plan: Plan) throws(SystemError) -> Int32 {
        let rules = (plan.sharedRules == nil ? Landlock.sharedRules : []) + plan.fileRules
        return try Landlock.restrict(to: rules, adding: plan.sharedRules) ? Landlock.abiVersion : 0
    }

    /// The first step alone: the bounding and ambient capabilities but `capabilities` dropped
    /// (some 40 system calls), which a standby takes before its launch for those no app of its
    /// host may keep. The capabilities the process holds stay until `confineProcess`.
    package static func dropCapabilityBounds(keeping capabilities: [String]) throws(SystemError) {
        try Capabilities.dropBoundingAndAmbient(keeping: try values(of: capabilities))
    }

    private static func values(of capabilities: [String]) throws(SystemError) -> [Int32] {
        var values: [Int32] = []
        for name in capabilities {
            guard let value = Capabilities.value(named: name) else { throw SystemError("cap_from_name(\(name))", errno: EINVAL) }
            values.append(value)
        }
        return values
    }

    /// PR_SET_NO_NEW_PRIVS: no execve can grant privileges again (set-user-id bits, file
    /// capabilities); also what seccomp and Landlock require of an unprivileged process.
    package static func forbidNewPrivileges() throws(SystemError) {
        try valueOrErrno("prctl(PR_SET_NO_NEW_PRIVS)") { apphost_set_no_new_privileges() }
    }

    /// Sets soft and hard limit to `value`, or to the hard limit the process has if that is
    /// lower (a host started under a lower one, `ulimit -Hn`: an app may not raise it).
    private static func setLimit(_ resource: __rlimit_resource, _ value: UInt64, name: String) throws(SystemError) {
        var current = rlimit()
        let ceiling = getrlimit(__rlimit_resource_t(resource.rawValue), &current) == 0 ? UInt64(current.rlim_max) : UInt64.max
        let value = min(value, ceiling)
        var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
        try valueOrErrno("setrlimit(\(name), \(value))") { setrlimit(__rlimit_resource_t(resource.rawValue), &limit) }
    }
}
