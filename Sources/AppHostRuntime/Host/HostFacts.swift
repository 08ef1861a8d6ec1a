/// What a host found at its start (its `started` event and `apphost doctor` say it): how it
/// suspends, confines and limits apps, and how many fit.
public struct HostFacts: Sendable {
    /// How this host suspends apps, and (when it is not the best) why.
    public let suspensionMechanism: SuspensionMechanism
    public let suspensionNote: String
    /// How this host confines apps, one line.
    public let sandboxNote: String
    /// How this host holds apps to their memory limits.
    public let memoryEnforcement: MemoryEnforcement
    /// The memory all apps together may use (the policy's, or three quarters of the host's).
    public let memoryBudget: UInt64
    /// How this host holds containers to their storage limits, and one line saying so.
    public let storageMechanism: StorageMechanism
    public let storageNote: String
    /// How many apps may run at once here, and which limit says so.
    public let capacity: HostCapacity
}
