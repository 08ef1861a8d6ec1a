import Foundation

// One table states every knob of `Policy` once: its policy-file key, its `apphost launch` flag,
// its kind (the unit, how a value is read and what makes it valid), a one-line help and the key
// path it sets; the default is read from `Policy()`. `Policy.load(contentsOf:)`, the command
// line (Sources/apphost/PolicyOptions.swift), `apphost launch --help` and README.md's "Policy"
// table all come from it.
//
// Why our own table and not apple/swift-configuration (1.4.0, a JSON file provider and a
// command-line provider layered over defaults): it cannot drive ArgumentParser, which still needs
// an @Option for each flag to parse and to list it in --help, so it would not remove a single
// declaration; its command-line provider reads `--key a b` as an array, swallowing the bundles
// that follow a repeatable flag, and spells flags from keys (backgroundCPULimit) differently from
// the existing ones (--background-cpu-limit, --allow-capability); with its JSON provider (read
// asynchronously) we would still check for unknown keys, MiB, ranges and paths, and word the
// errors, ourselves. Its cost would have been bearable: with it (and swift-system and
// swift-collections, which it pulls in) a clean `swift build --build-tests` took 116 s instead of
// 97 s on 2 shared cores, +19 s (one build each). But it would have replaced nothing, so the
// table is plain Swift: kinds read values and say what they expect, written once.

/// One budget or switch of `Policy`: how a policy file and `apphost launch` set it, and how it
/// is documented.
public struct PolicyKnob {
    /// The key in a policy file, which is also the property's name: `backgroundTime`.
    public let key: String
    /// The long flag of `apphost launch`, without its dashes: `background-time`.
    public let flag: String
    /// What the value is, and the property it sets.
    public let kind: Kind
    /// One line for `apphost launch --help` and README.md, without the default.
    public let help: String
    /// How the default reads when the property's default is nil ("never").
    let unsetDefault: String?

    init(_ key: String, _ flag: String, _ kind: Kind, _ help: String, unset: String? = nil) {
        self.key = key
        self.flag = flag
        self.kind = kind
        self.help = help
        self.unsetDefault = unset
    }

    /// What a knob holds. Each kind reads its value from a policy file's JSON or from the command
    /// line's words, checks it, and says what it expects when it is wrong.
    public enum Kind {
        /// Positive seconds, fractions allowed.
        case seconds(WritableKeyPath<Policy, Duration>)
        /// Positive seconds, or nil when not set.
        case optionalSeconds(WritableKeyPath<Policy, Duration?>)
        /// A positive whole number.
        case count(WritableKeyPath<Policy, Int>)
        /// A positive whole number, or nil when not set.
        case optionalCount(WritableKeyPath<Policy, Int?>)
        /// A positive number of MiB, stored in bytes.
        case mebibytes(WritableKeyPath<Policy, UInt64>)
        /// A positive number of MiB stored in bytes, or nil when not set.
        case optionalMebibytes(WritableKeyPath<Policy, UInt64?>)
        /// A positive percentage of one CPU core.
        case percentOfCore(WritableKeyPath<Policy, Double>)
        /// On or off: true or false in a file, `--flag` and `--no-flag` on the command line.
        case toggle(WritableKeyPath<Policy, Bool>)
        /// Capability names such as CAP_NET_BIND_SERVICE; a repeatable flag adds to the file's.
        case capabilityNames(WritableKeyPath<Policy, [String]>)
        /// Absolute paths; a repeatable flag adds to the file's, made absolute against the
        /// working directory.
        case absolutePaths(WritableKeyPath<Policy, [String]>)
        /// A range of uids and gids, "FIRST-LAST".
        case userRange(WritableKeyPath<Policy, ClosedRange<UInt32>>)
    }
}

extension Policy {
    /// Every knob, in the order `--help` and README.md list them.
    nonisolated(unsafe) public static let knobs: [PolicyKnob] = [
        .init("launchTimeout", "launch-timeout", .seconds(\.launchTimeout),
              "Launch budget: willFinishLaunching, didFinishLaunching and the first didBecomeActive, from spawn"),
        .init("callbackTimeout", "callback-timeout", .seconds(\.callbackTimeout),
              "Budget of any other delegate callback on the main thread"),
        .init("didEnterBackgroundTimeout", "did-enter-background-timeout", .seconds(\.didEnterBackgroundTimeout),
              "applicationDidEnterBackground budget"),
        .init("willTerminateTimeout", "will-terminate-timeout", .seconds(\.willTerminateTimeout),
              "applicationWillTerminate budget"),
        .init("suspendTimeout", "suspend-timeout", .seconds(\.suspendTimeout),
              "An app whose threads are not all stopped this long after the host began suspending it is ended (the freeze could not be verified)"),
        .init("backgroundTime", "background-time", .seconds(\.backgroundTime),
              "Background time per app, all its background tasks together"),
        .init("expirationWarning", "expiration-warning", .seconds(\.expirationWarning),
              "Expiration handlers run this long before the background time ends"),
        .init("expirationGrace", "expiration-grace", .seconds(\.expirationGrace),
              "Grace after the background time ends before 0x2182bad2"),
        .init("expirationHandlerTimeout", "expiration-handler-timeout", .seconds(\.expirationHandlerTimeout),
              "Watchdog of one expiry's expiration handlers on the main thread, together (0x8badf00d)"),
        .init("maximumBackgroundTasks", "maximum-background-tasks", .count(\.maximumBackgroundTasks),
              "Most open background tasks per app before 0xbada5e47"),
        .init("allowedCapabilities", "allow-capability", .capabilityNames(\.allowedCapabilities),
              "A capability apps may ask for in Info.plist (AppHostCapabilities)"),
        .init("openFileLimit", "open-file-limit", .count(\.openFileLimit),
              "Open files per app process (RLIMIT_NOFILE)"),
        .init("processLimit", "process-limit", .count(\.processLimit),
              "Processes and threads per app (pids cgroup, else RLIMIT_NPROC)"),
        .init("maximumViolations", "maximum-violations", .optionalCount(\.maximumViolations),
              "Refused system calls an app may make before it is terminated", unset: "never; each is reported"),
        .init("perAppUsers", "app-users", .toggle(\.perAppUsers),
              "On a root host, run each app under its own user (off: every app under one shared unprivileged user; never as root)"),
        .init("appUserRange", "app-user-range", .userRange(\.appUserRange),
              "On a root host, the uids and gids given to apps and app groups"),
        .init("foregroundMemoryLimit", "foreground-memory-limit", .mebibytes(\.foregroundMemoryLimit),
              "Memory an app may use in the foreground"),
        .init("backgroundMemoryLimit", "background-memory-limit", .mebibytes(\.backgroundMemoryLimit),
              "Memory an app may use in the background and suspended (at most the foreground limit)"),
        .init("memoryBudget", "memory-budget", .optionalMebibytes(\.memoryBudget),
              "Memory all apps together may use before memory pressure",
              unset: "3/4 of the host's: its memory cgroup's limit, else the machine's"),
        .init("memoryWarningGrace", "memory-warning-grace", .seconds(\.memoryWarningGrace),
              "Time after a memory warning before apps are ended to free memory"),
        .init("resourceSampleInterval", "resource-sample-interval", .seconds(\.resourceSampleInterval),
              "How often running apps' memory and background CPU are measured"),
        .init("backgroundCPULimit", "background-cpu-limit", .percentOfCore(\.backgroundCPULimit),
              "CPU an app may use in the background, averaged over --background-cpu-window"),
        .init("backgroundCPUWindow", "background-cpu-window", .seconds(\.backgroundCPUWindow),
              "The window of --background-cpu-limit"),
        .init("sharedResources", "shared-resource", .absolutePaths(\.sharedResources),
              "A shared system resource (device, database file, Unix socket): an app that has it open when it would be suspended is ended with 0xdead10cc"),
        .init("backgroundFetchTime", "background-fetch-time", .seconds(\.backgroundFetchTime),
              "A background fetch's or background notification's time to call its completion handler"),
        .init("backgroundURLSessionTime", "background-url-session-time", .seconds(\.backgroundURLSessionTime),
              "The time to call the completion handler of application(_:handleEventsForBackgroundURLSession:completionHandler:) (else 0x2182bad3)"),
        .init("appRefreshTaskTime", "app-refresh-task-time", .seconds(\.appRefreshTaskTime),
              "A BGAppRefreshTask's time before its expiration"),
        .init("processingTaskTime", "processing-task-time", .seconds(\.processingTaskTime),
              "A BGProcessingTask's time before its expiration"),
        .init("minimumBackgroundFetchInterval", "minimum-background-fetch-interval", .seconds(\.minimumBackgroundFetchInterval),
              "The least time between two background fetches of an app"),
        .init("minimumRefreshTaskInterval", "minimum-refresh-task-interval", .seconds(\.minimumRefreshTaskInterval),
              "The least time between two scheduled runs of one BGAppRefreshTask identifier (run-task is not held to it)"),
        .init("minimumProcessingTaskInterval", "minimum-processing-task-interval", .seconds(\.minimumProcessingTaskInterval),
              "The least time between two scheduled runs of one BGProcessingTask identifier (run-task is not held to it)"),
        .init("maximumPendingRefreshRequests", "maximum-pending-refresh-requests", .count(\.maximumPendingRefreshRequests),
              "Pending BGAppRefreshTaskRequests per app"),
        .init("maximumPendingProcessingRequests", "maximum-pending-processing-requests", .count(\.maximumPendingProcessingRequests),
              "Pending BGProcessingTaskRequests per app"),
        .init("voipResumeLimit", "voip-resume-limit", .count(\.voipResumeLimit),
              "Resumptions by VoIP pushes an app may have within --voip-resume-window before 0xbad22222"),
        .init("voipResumeWindow", "voip-resume-window", .seconds(\.voipResumeWindow),
              "The window of --voip-resume-limit"),
        .init("continuousHoldLimit", "continuous-hold-limit", .optionalSeconds(\.continuousHoldLimit),
              "How long audio, location or a call may keep an app running in the background, after which it is suspended as if nothing held it (until it next comes to the foreground)",
              unset: "none, as on iOS"),
        .init("unpushedCallLimit", "unpushed-call-limit", .optionalSeconds(\.unpushedCallLimit),
              "How long a call that no VoIP push brought (reported by hand) may keep its app running in the background; the host then ends it",
              unset: "none, as on iOS"),
        .init("locationUpdateInterval", "location-update-interval", .seconds(\.locationUpdateInterval),
              "How often a replayed location route moves the device and updates reach apps"),
        // Storage (docs/storage.md, "Storage limits").
        .init("storageLimit", "storage-limit", .mebibytes(\.storageLimit),
              "Disk space an app's container may take (Documents, Library, tmp): the size of its file system, or its project quota"),
        .init("appGroupStorageLimit", "app-group-storage-limit", .mebibytes(\.appGroupStorageLimit),
              "Disk space each app-group container may take, shared by the group's apps"),
    ]

    /// The knob of a policy-file key; a key missing from `knobs` is a programming error.
    public static func knob(_ key: String) -> PolicyKnob {
        guard let knob = knobs.first(where: { $0.key == key }) else { preconditionFailure("Policy.knobs has no knob \(key)") }
        return knob
    }

    /// This policy with the knobs given on the command line set: each knob's key with the
    /// words given for its flag (none: not given; a toggle's are "true" or "false").
    public func applying(commandLine values: [(key: String, words: [String])]) throws(PolicyError) -> Policy {
        var policy = self
        var given: Set<String> = []
        for (key, words) in values where !words.isEmpty {
            let knob = Self.knob(key)
            guard knob.kind.set(.commandLine(words), in: &policy) else {
                throw PolicyError("--\(knob.flag) must be \(knob.kind.expectation)")
            }
            given.insert(key)
        }
        policy.lowerBackgroundMemoryLimit(unlessSet: given.contains("backgroundMemoryLimit"))
        try policy.validate()
        return policy
    }

    /// A foreground limit below the default background one lowers the background one too.
    mutating func lowerBackgroundMemoryLimit(unlessSet backgroundLimitSet: Bool) {
        if !backgroundLimitSet { backgroundMemoryLimit = min(backgroundMemoryLimit, foregroundMemoryLimit) }
    }
}

extension PolicyKnob.Kind {
    /// A value as it came: a policy file's JSON value, or the words given for a flag (several
    /// for a repeated flag).
    enum Given {
        case file(PolicyFileValue)
        case commandLine([String])
    }

    /// What a valid value is, to end "KEY must be …".
    public var expectation: String {
        switch self {
        case .seconds, .optionalSeconds: "a positive number of seconds"
        case .count, .optionalCount: "a positive whole number"
        case .mebibytes, .optionalMebibytes: "a positive number of MiB"
        case .percentOfCore: "a positive percentage of a core"
        case .toggle: "true or false"
        case .capabilityNames: "an array of capability names such as CAP_NET_BIND_SERVICE"
        case .absolutePaths: "an array of absolute paths"
        case .userRange: "a range FIRST-LAST of ids above 0, e.g. \"2000000000-2000099999\""
        }
    }

    /// Sets the value in `policy`; false, leaving `policy` as it was, if the value is not one
    /// this kind takes. Repeated flags of a list add to the list; a file's list replaces it.
    func set(_ given: Given, in policy: inout Policy) -> Bool {
        switch self {
        case .seconds(let path):
            guard let value = given.positiveNumber else { return false }
            policy[keyPath: path] = .seconds(double: value)
        case .optionalSeconds(let path):
            guard let value = given.positiveNumber else { return false }
            policy[keyPath: path] = .seconds(double: value)
        case .count(let path):
            guard let value = given.positiveCount else { return false }
            policy[keyPath: path] = value
        case .optionalCount(let path):
            guard let value = given.positiveCount else { return false }
            policy[keyPath: path] = value
        case .mebibytes(let path):
            guard let value = given.positiveNumber else { return false }
            policy[keyPath: path] = UInt64(value * 1_048_576)
        case .optionalMebibytes(let path):
            guard let value = given.positiveNumber else { return false }
            policy[keyPath: path] = UInt64(value * 1_048_576)
        case .percentOfCore(let path):
            guard let value = given.positiveNumber else { return false }
            policy[keyPath: path] = value
        case .toggle(let path):
            switch given {
            case .file(let value):
                guard case .bool(let flag) = value else { return false }
                policy[keyPath: path] = flag
            case .commandLine(let words):
                guard let last = words.last, let flag = Bool(last) else { return false }
                policy[keyPath: path] = flag
            }
        case .capabilityNames(let path):
            switch given {
            case .file(let value):
                guard let names = value.strings else { return false }
                policy[keyPath: path] = names
            case .commandLine(let names):
                policy[keyPath: path] += names
            }
        case .absolutePaths(let path):
            switch given {
            case .file(let value):
                guard let paths = value.strings, paths.allSatisfy({ $0.hasPrefix("/") }) else { return false }
                policy[keyPath: path] = paths
            case .commandLine(let paths):
                policy[keyPath: path] += paths.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            }
        case .userRange(let path):
            let text: String?
            switch given {
            case .file(let value):
                if case .string(let string) = value { text = string } else { text = nil }
            case .commandLine(let words): text = words.last
            }
            guard let text, let range = Policy.userRange(text) else { return false }
            policy[keyPath: path] = range
        }
        return true
    }
}

extension PolicyKnob.Kind.Given {
    /// A positive, finite number: a JSON number, whole or not (never a Boolean or a string), or
    /// the last word given.
    var positiveNumber: Double? {
        let value: Double?
        switch self {
        case .file(let json):
            if case .number(let number) = json { value = number } else { value = nil }
        case .commandLine(let words):
            value = words.last.flatMap(Double.init)
        }
        guard let value, value > 0, value.isFinite else { return nil }
        return value
    }

    /// A positive whole number: a JSON number without a fraction (1 and 1.0, not 2.5), or the
    /// last word given.
    var positiveCount: Int? {
        let value: Int?
        switch self {
        case .file(let json):
            if case .number(let number) = json, number == number.rounded(), abs(number) < 1e15 { value = Int(number) } else { value = nil }
        case .commandLine(let words):
            value = words.last.flatMap { Int($0) }
        }
        guard let value, value > 0 else { return nil }
        return value
    }
}
