import Foundation
import AppHostSandbox

/// Every budget of the life cycle, with iOS's defaults (docs/policy.md, "Policy"). Set from the
/// command line (`apphost launch --background-time 3 …`) or a policy file (`--policy FILE`).
/// `Policy.knobs` (PolicyKnobs.swift) lists every property with its file key, flag and unit;
/// a property without a knob can be set by neither.
///
/// A policy file is a JSON object whose keys are the property names below and whose values are
/// seconds, MiB, counts… as `Policy.knobs` says; keys left out keep their defaults:
///
///     { "backgroundTime": 10, "expirationWarning": 2, "didEnterBackgroundTimeout": 1 }
public struct Policy: Sendable, Equatable {
    /// `willFinishLaunching` + `didFinishLaunching` + the first `didBecomeActive`, from spawn.
    public var launchTimeout: Duration = .seconds(20)
    /// Any other delegate callback on the main thread.
    public var callbackTimeout: Duration = .seconds(10)
    /// `applicationDidEnterBackground`.
    public var didEnterBackgroundTimeout: Duration = .seconds(5)
    /// `applicationWillTerminate`.
    public var willTerminateTimeout: Duration = .seconds(5)
    /// An app whose threads are not all stopped this long after the host began suspending it is
    /// ended (`suspension-failed`): the freeze could not be verified.
    public var suspendTimeout: Duration = .seconds(2)
    /// All of an app's background tasks together, from entering the background.
    public var backgroundTime: Duration = .seconds(30)
    /// Expiration handlers run this long before the background time ends.
    public var expirationWarning: Duration = .seconds(5)
    /// How long after the background time ends the app may still hold tasks before it is killed.
    public var expirationGrace: Duration = .seconds(5)
    /// The watchdog of one expiry's expiration handlers on the main thread, all together: Apple
    /// asks for "less than a second or so"; longer ends the app with 0x8badf00d.
    public var expirationHandlerTimeout: Duration = .seconds(1)
    /// More open background tasks than this in one app: killed with 0xbada5e47.
    public var maximumBackgroundTasks = 1000
    /// A background fetch or background remote notification, to call its completion handler.
    public var backgroundFetchTime: Duration = .seconds(30)
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`, to call its
    /// completion handler (else 0x2182bad3).
    public var backgroundURLSessionTime: Duration = .seconds(30)
    /// A `BGAppRefreshTask`, to call `setTaskCompleted(success:)` before its expiration.
    public var appRefreshTaskTime: Duration = .seconds(30)
    /// A `BGProcessingTask`, likewise.
    public var processingTaskTime: Duration = .seconds(300)
    /// The least time between two background fetches of an app, whatever interval it asks for.
    public var minimumBackgroundFetchInterval: Duration = .seconds(900)
    /// The least time between two runs of the same BGTaskScheduler task identifier, by the
    /// scheduler (and `advance`); `run-task` is not held to it. iOS runs an app's refresh at most
    /// every quarter of an hour or so, and its processing tasks rarely more than once a day.
    public var minimumRefreshTaskInterval: Duration = .seconds(900)
    public var minimumProcessingTaskInterval: Duration = .seconds(3600)
    /// Pending BGTaskScheduler requests one app may have.
    public var maximumPendingRefreshRequests = 1
    public var maximumPendingProcessingRequests = 10
    /// A VoIP app resumed in the background by VoIP pushes more than this many times within
    /// `voipResumeWindow` is ended with 0xbad22222.
    public var voipResumeLimit = 10
    public var voipResumeWindow: Duration = .seconds(60)
    /// How long a continuous mode (audio, location, a call) may hold an app running in the
    /// background before it is suspended regardless; nil: for as long as it lasts, as on iOS.
    public var continuousHoldLimit: Duration?
    /// How long a call that no VoIP push brought may hold its app; nil: as long as it lasts.
    public var unpushedCallLimit: Duration?
    /// How often a replayed location route moves the simulated device and updates reach apps.
    public var locationUpdateInterval: Duration = .seconds(1)
    /// Capabilities a bundle may ask for (Info.plist `AppHostCapabilities`), e.g.
    /// CAP_NET_BIND_SERVICE. Apps hold no capability unless asked for and allowed here.
    public var allowedCapabilities: [String] = []
    /// RLIMIT_NOFILE of each app process.
    public var openFileLimit = 1024
    /// Processes and threads of one app together (pids cgroup, else RLIMIT_NPROC).
    public var processLimit = 512
    /// Refused system calls an app may make before it is terminated; nil: never terminated for
    /// them (each is still reported).
    public var maximumViolations: Int?
    /// On a root host, run each app under its own uid/gid from this range.
    public var perAppUsers = true
    public var appUserRange: ClosedRange<UInt32> = 2_000_000_000...2_000_099_999

    /// Memory an app may use while in the foreground (launching, inactive, active), in bytes.
    public var foregroundMemoryLimit: UInt64 = 1024 << 20
    /// Memory an app may use in the background and suspended, in bytes. An app over it when it
    /// enters the background is ended then.
    public var backgroundMemoryLimit: UInt64 = 256 << 20
    /// Memory all apps together may use, in bytes; nil: three quarters of what the host may use
    /// (its memory cgroup's limit, or the machine's memory).
    public var memoryBudget: UInt64?
    /// After the budget is exceeded, running apps get `applicationDidReceiveMemoryWarning`; if
    /// the apps are still over it this long after, suspended apps are ended.
    public var memoryWarningGrace: Duration = .seconds(2)
    /// How often the host measures running apps' memory and background CPU. Nothing is
    /// measured while every app is suspended.
    public var resourceSampleInterval: Duration = .milliseconds(250)
    /// CPU an app may use in the background, in percent of one core, averaged over
    /// `backgroundCPUWindow`.
    public var backgroundCPULimit: Double = 80
    public var backgroundCPUWindow: Duration = .seconds(60)
    /// Paths of shared system resources (a device, a database file, a Unix socket): an app that
    /// has one open when it would be suspended is ended with 0xdead10cc.
    public var sharedResources: [String] = []

    /// The disk space an app's container (Documents, Library, tmp) may take, in bytes: the size
    /// of its file system, or its project quota. 2 GiB is far more than an ordinary app keeps
    /// (iOS sets no per-app figure; its apps meet the device's free space), yet bounds what one
    /// runaway app takes from a host shared by several; an image is sparse, so the default
    /// costs no disk until used.
    public var storageLimit: UInt64 = 2048 << 20
    /// The disk space each app-group container may take, in bytes, shared by the group's apps.
    public var appGroupStorageLimit: UInt64 = 1024 << 20
    /// The smallest storage limit: an ext4 file system's journal and tables need a few MiB.
    public static let minimumStorageLimit: UInt64 = 16 << 20

    public init() {}

    /// "FIRST-LAST" as a range of ids, nil if malformed or empty.
    public static func userRange(_ text: String) -> ClosedRange<UInt32>? {
        let parts = text.split(separator: "-")
        guard parts.count == 2, let first = UInt32(parts[0]), let last = UInt32(parts[1]), first > 0, first <= last else { return nil }
        return first...last
    }

    /// Checks that the budgets fit together.
    public func validate() throws(PolicyError) {
        for name in allowedCapabilities where Capabilities.value(named: name) == nil {
            throw PolicyError("allowedCapabilities: \(name) is not a capability this kernel knows (see capabilities(7))")
        }
        guard backgroundMemoryLimit <= foregroundMemoryLimit else {
            throw PolicyError(
                "backgroundMemoryLimit (\(backgroundMemoryLimit.mebibytes)) must not exceed foregroundMemoryLimit (\(foregroundMemoryLimit.mebibytes))")
        }
        for path in sharedResources where !path.hasPrefix("/") {
            throw PolicyError("sharedResources: \(path) is not an absolute path")
        }
        for (key, limit) in [("storageLimit", storageLimit), ("appGroupStorageLimit", appGroupStorageLimit)] where limit < Self.minimumStorageLimit {
            throw PolicyError("\(key) (\(limit.mebibytes)) must be at least \(Self.minimumStorageLimit.mebibytes): a container's file system needs room for its own bookkeeping")
        }
        guard expirationWarning < backgroundTime else {
            throw PolicyError(
                "expirationWarning (\(expirationWarning.formatted)) must be shorter than backgroundTime (\(backgroundTime.formatted))")
        }
    }
}

/// A policy that cannot be used, with the reason.
public struct PolicyError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension UInt64 {
    /// "64.0 MiB": how events, reports and `ps` print memory.
    public var mebibytes: String {
        String(format: "%.1f MiB", Double(self) / 1_048_576)
    }
}
