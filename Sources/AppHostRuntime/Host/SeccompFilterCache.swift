#if canImport(Glibc)
import Glibc
#endif
import AppHostSandbox

/// The seccomp filters the host compiles for its launches, by entitlements and the pid the app
/// sees as its own. In a PID namespace that pid is always the same (`Namespaces.appPID`), so
/// each app's filter is compiled once per host and kept; one for a host pid is compiled each
/// time. Touched only on the host's loop.
final class SeccompFilterCache {
    private var programs: [String: Seccomp.Program] = [:]

    /// The filter for these entitlements and own pid.
    func program(entitlements: Set<SyscallProfile.Entitlement>, ownPID: pid_t) throws -> Seccomp.Program {
        let key = entitlements.map(\.rawValue).sorted().joined(separator: ",") + "/\(ownPID)"
        let program = try programs[key] ?? Seccomp.compile(SyscallProfile(entitlements: entitlements, ownPID: ownPID))
        if ownPID == Namespaces.appPID { programs[key] = program }
        return program
    }
}
