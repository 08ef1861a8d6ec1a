#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
import CCap

/// The app process's capabilities: none, unless its bundle asked for some that the host's policy
/// allows (docs/sandbox.md, "The sandbox"). Applied by the runner before the plugin is loaded.
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
    package static func dropBoundingAndAmbient(keeping kept: [Int32]) throws(SystemError) {
        do {
            try valueOrErrno("cap_reset_ambient") { cap_reset_ambient() }
        } catch where error.errno == EINVAL {
            // A kernel without ambient capabilities has none to clear.
        }
        // What a drop needs is CAP_SETPCAP in effect, whether or not it is still in the bounding set
        // (a standby drops it from there before its launch, which drops the rest).
        let canDropBound = hasEffective(cap_value_t(CAP_SETPCAP))
        if canDropBound {
            // A standby dropped most before its launch (AppProcessRunner.prepareStandby): a read
            // costs less than a drop, which makes new credentials.
            for capability in 0..<cap_max_bits() where !kept.contains(capability) && cap_get_bound(capability) != 0 {
                try valueOrErrno("cap_drop_bound(\(capability))") { cap_drop_bound(capability) }
            }
        }
    }

    /// Leaves only `kept` in the permitted and effective sets, the inheritable set empty.
    package static func setProcess(to kept: [Int32]) throws(SystemError) {
        let set = try pointerOrErrno("cap_init") { cap_init() }
        defer { cap_free(UnsafeMutableRawPointer(set)) }
        if !kept.isEmpty {
            for flag in [CAP_PERMITTED, CAP_EFFECTIVE] {
                try valueOrErrno("cap_set_flag") { cap_set_flag(set, flag, Int32(kept.count), kept, CAP_SET) }
            }
        }
        try valueOrErrno("cap_set_proc") { cap_set_proc(set) }
    }

    private static func hasEffective(_ capability: cap_value_t) -> Bool {
        guard let current = cap_get_proc() else { return false }
        defer { cap_free(UnsafeMutableRawPointer(current)) }
        var value = CAP_CLEAR
        return cap_get_flag(current, capability, CAP_EFFECTIVE, &value) == 0 && value == CAP_SET
    }
}
