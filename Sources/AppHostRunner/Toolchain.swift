/// The Swift toolchain this code was compiled by, in Swift's terms: what a person rebuilding a
/// plugin needs to know (`swift --version` says it), where the plugin record can only quote the
/// toolchain's clang. Known to the minor version (`#if compiler` cannot read a snapshot's date).
public enum Toolchain {
    /// "6.3.1", "6.2", …: the newest release this compiler is at least.
    public static let swiftVersion: String = {
        #if compiler(>=6.5)
        return "6.5 or later"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3.2)
        return "6.3.2"
        #elseif compiler(>=6.3.1)
        return "6.3.1"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }()
}
