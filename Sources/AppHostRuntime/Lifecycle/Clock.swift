#if canImport(Glibc)
import Glibc
#endif

/// A point on the monotonic clock (CLOCK_MONOTONIC), which the app processes share with the host.
public struct HostInstant: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (lhs: HostInstant, rhs: HostInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: HostInstant, rhs: Duration) -> HostInstant {
        HostInstant(nanoseconds: UInt64(max(0, Int64(lhs.nanoseconds) + rhs.nanoseconds)))
    }

    public static func - (lhs: HostInstant, rhs: Duration) -> HostInstant { lhs + (.zero - rhs) }

    /// The time from `self` to `other` (negative if `other` is earlier).
    public func duration(to other: HostInstant) -> Duration {
        .nanoseconds(Int64(other.nanoseconds) - Int64(nanoseconds))
    }
}

/// Where the supervisor gets the time; tests of the driver may inject their own.
public protocol HostClock: Sendable {
    var now: HostInstant { get }
}

/// CLOCK_MONOTONIC, the clock Dispatch's timers use on Linux.
public struct MonotonicClock: HostClock {
    public init() {}

    public var now: HostInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return HostInstant(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }
}

extension Duration {
    /// The duration as a Double number of seconds.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// A duration from a Double number of seconds.
    public static func seconds(double value: Double) -> Duration {
        .nanoseconds(Int64((value * 1e9).rounded()))
    }

    /// "5.0 s", "0.25 s": how reports and event lines print budgets.
    var formatted: String {
        let value = seconds
        if value == value.rounded() { return "\(Int(value)).0 s" }
        return "\((value * 1000).rounded() / 1000) s"
    }
}
