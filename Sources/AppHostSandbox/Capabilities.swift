#if canImport(Glibc)
import Glibc
#endif
import CCap

/// The app process's capabilities: none, unless its bundle asked for some that the host's policy
/// allows (DESIGN.md, Sandbox). Applied by the runner before the plugin is loaded.
package enum Capabilities {
    /// The number of a capability name such as `CAP_NET_BIND_SERVICE` (cap_from_name), or nil.
    package static func value(named name: String) -> Int32? {
        var value: cap_value_t = 0
        return cap_from_name(name.lowercased(), &value) == 0 ? value : nil
    }

    /// Clears the ambient set and drops every capability but `kept` from the bounding set.
    ///
    /// Dropping from the bounding set needs CAP_SETPCAP: a host without it (a non-root host) leaves
    /// its bounding set as it is, which NO_NEW_PRIVS makes harmless; that is not an error.
    package static func dropBoundingAndAmbient(keeping kept: [Int32]) throws(ConfinementError) {
        guard cap_reset_ambient() == 0 || errno == EINVAL else { throw ConfinementError("cap_reset_ambient", errno: errno) }
        let canDropBound = cap_get_bound(cap_value_t(CAP_SETPCAP)) == 1 && hasEffective(cap_value_t(CAP_SETPCAP))
        if canDropBound {
            for capability in 0..<cap_max_bits() where !kept.contains(capability) {
                guard cap_drop_bound(capability) == 0 else { throw ConfinementError("cap_drop_bound(\(capability))", errno: errno) }
            }
        }
    }

    /// Leaves only `kept` in the permitted and effective sets, the inheritable set empty.
    package static func setProcess(to kept: [Int32]) throws(ConfinementError) {
        guard let set = cap_init() else { throw ConfinementError("cap_init", errno: errno) }
        defer { cap_free(UnsafeMutableRawPointer(set)) }
        if !kept.isEmpty {
            for flag in [CAP_PERMITTED, CAP_EFFECTIVE] {
                guard cap_set_flag(set, flag, Int32(kept.count), kept, CAP_SET) == 0 else {
                    throw ConfinementError("cap_set_flag", errno: errno)
                }
            }
        }
        guard cap_set_proc(set) == 0 else { throw ConfinementError("cap_set_proc", errno: errno) }
    }

    private static func hasEffective(_ capability: cap_value_t) -> Bool {
        guard let current = cap_get_proc() else { return false }
        defer { cap_free(UnsafeMutableRawPointer(current)) }
        var value = CAP_CLEAR
        return cap_get_flag(current, capability, CAP_EFFECTIVE, &value) == 0 && value == CAP_SET
    }
}

/// A confinement step that failed: the app must not run unconfined, so its launch fails.
package struct ConfinementError: Error, CustomStringConvertible {
    package var call: String
    package var errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var description: String { "\(call): \(String(cString: strerror(errno)))" }
}
