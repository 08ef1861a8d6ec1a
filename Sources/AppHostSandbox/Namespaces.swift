#if canImport(Glibc)
import AppHostSystem
import Glibc
#endif
import CAppHostShims

/// Each app in a PID namespace and a mount namespace of its own (docs/sandbox.md, "The sandbox").
///
/// The host starts `apphost-init` as the init (pid 1) of a new PID namespace, and it starts the
/// app's runner (pid 2): when the init ends, however it ends (the host killed with SIGKILL
/// included, through its parent-death signal), the kernel ends every process left in the
/// namespace, so nothing an app spawned outlives it. The init makes every mount of the new
/// mount namespace read-only but the app's containers, so that no call (chmod, chown, setxattr,
/// utimensat, which Landlock does not govern) changes a file outside them, and mounts a /proc
/// that shows only the app's processes. A host that is not root makes a user namespace too,
/// mapping its own uid to itself.
package enum Namespaces {
    /// What this kernel and user can give apps.
    package enum Support: Sendable, Equatable {
        /// `flags` for `apphost_spawn`.
        case available(flags: Int32)
        /// Why not, in a phrase.
        case unavailable(String)

        package var flags: Int32 {
            if case .available(let flags) = self { return flags }
            return 0
        }
    }

    /// The pid of the app process in its PID namespace: the init's one child.
    package static let appPID: Int32 = 2

    /// Tries once: makes the namespaces in a short-lived child, which mounts a /proc and makes
    /// a mount read-only as the init will (about a millisecond).
    package static func probe() -> Support {
        var flags = Int32(APPHOST_NAMESPACE_PID_AND_MOUNT)
        if geteuid() != 0 { flags |= Int32(APPHOST_NAMESPACE_USER) }
        var step: UnsafePointer<CChar>?
        guard apphost_probe_namespaces(flags, &step) == 0 else {
            let failed = step.map { String(cString: $0) } ?? "clone"
            let user = geteuid() == 0 ? "" : " (a host that is not root needs an unprivileged user namespace)"
            return .unavailable("cannot make a PID and mount namespace\(user): \(failed): \(errnoText(errno))")
        }
        return .available(flags: flags)
    }

    /// In the runner: the descriptor on which the init reports the file system's isolation.
    package static let isolationReportFD: Int32 = 5

    /// In a standby's runner (docs/launching.md, "How apps are launched"): joins the mount namespace its
    /// init made and isolated but for the app's paths, before the launch confines this process
    /// (setns needs the capabilities the launch drops, and the app's filter forbids it). Returns
    /// false if it could not (its init ended first, or setns failed).
    package static func joinPreparedNamespace() -> Bool {
        apphost_join_prepared_namespace(isolationReportFD) == 0
    }

    /// In the runner, in the app's namespaces: waits until the init has isolated the file
    /// system (`apphost_isolate_file_system`, or `apphost_isolate_show` in a namespace prepared
    /// before the launch, which it does while the runner confines itself) and made the app's
    /// Landlock ruleset. Returns the ruleset, for `Landlock.enforce` (nil
    /// where the kernel has no Landlock), or what failed.
    package static func awaitIsolatedFileSystem() -> Result<Int32?, IsolationFailure> {
        defer { closeIgnoringErrors(isolationReportFD) }
        var failure = [CChar](repeating: 0, count: 1024)
        var ruleset: Int32 = -1
        switch apphost_await_isolation(isolationReportFD, &failure, failure.count, &ruleset) {
        case 0: return .success(ruleset >= 0 ? ruleset : nil)
        case 1:
            let reason = String(decoding: failure.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(IsolationFailure(description: reason))
        default: return .failure(IsolationFailure(description: "the namespace's init ended without isolating it"))
        }
    }

    /// Why the init could not isolate the app's file system, in its words.
    package struct IsolationFailure: Error, CustomStringConvertible {
        package var description: String
    }
}
