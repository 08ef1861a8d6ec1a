#if canImport(Glibc)
import Glibc
#endif
import CCap

/// What the runner does to its own process before any app code runs, in this order: capabilities,
/// NO_NEW_PRIVS, resource limits. (seccomp, Landlock and the per-app user come in later work.)
package enum Confinement {
    /// The resource limits of an app process.
    package struct Limits: Sendable, Equatable {
        /// RLIMIT_NOFILE.
        package var openFiles: UInt64
        /// RLIMIT_CORE is always 0: a crashing app leaves a report, not a core file.
        package init(openFiles: UInt64) { self.openFiles = openFiles }
    }

    package static func apply(capabilities: [String], limits: Limits) throws(ConfinementError) {
        var kept: [Int32] = []
        for name in capabilities {
            guard let value = Capabilities.value(named: name) else { throw ConfinementError("cap_from_name(\(name))", errno: EINVAL) }
            kept.append(value)
        }
        try Capabilities.restrict(to: kept)
        guard apphost_set_no_new_privileges() == 0 else { throw ConfinementError("prctl(PR_SET_NO_NEW_PRIVS)", errno: errno) }
        try setLimit(RLIMIT_CORE, 0, name: "RLIMIT_CORE")
        try setLimit(RLIMIT_NOFILE, limits.openFiles, name: "RLIMIT_NOFILE")
    }

    private static func setLimit(_ resource: __rlimit_resource, _ value: UInt64, name: String) throws(ConfinementError) {
        var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
        guard setrlimit(__rlimit_resource_t(resource.rawValue), &limit) == 0 else { throw ConfinementError("setrlimit(\(name), \(value))", errno: errno) }
    }
}
