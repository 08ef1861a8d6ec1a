import ArgumentParser
import AppHostRuntime

/// The policy flags of `apphost launch`, one per row of `Policy.knobs`.
///
/// ArgumentParser finds options only among declared properties, so each knob has a thin
/// declaration here, named after its policy-file key; its flag, value name and help (with the
/// default) come from the table. Values arrive as words and are read, checked and applied by the
/// knob's kind (`Policy.applying(commandLine:)`), the same code that reads a policy file. The
/// declarations are checked against the table whenever the flags are parsed, so a knob without a
/// flag or a flag without a knob stops `apphost launch` at once.
struct PolicyOptions: ParsableArguments {
    @Option(name: .knob("launchTimeout"), help: .knob("launchTimeout")) var launchTimeout: String?
    @Option(name: .knob("callbackTimeout"), help: .knob("callbackTimeout")) var callbackTimeout: String?
    @Option(name: .knob("didEnterBackgroundTimeout"), help: .knob("didEnterBackgroundTimeout")) var didEnterBackgroundTimeout: String?
    @Option(name: .knob("willTerminateTimeout"), help: .knob("willTerminateTimeout")) var willTerminateTimeout: String?
    @Option(name: .knob("suspendTimeout"), help: .knob("suspendTimeout")) var suspendTimeout: String?
    @Option(name: .knob("backgroundTime"), help: .knob("backgroundTime")) var backgroundTime: String?
    @Option(name: .knob("expirationWarning"), help: .knob("expirationWarning")) var expirationWarning: String?
    @Option(name: .knob("expirationGrace"), help: .knob("expirationGrace")) var expirationGrace: String?
    @Option(name: .knob("expirationHandlerTimeout"), help: .knob("expirationHandlerTimeout")) var expirationHandlerTimeout: String?
    @Option(name: .knob("maximumBackgroundTasks"), help: .knob("maximumBackgroundTasks")) var maximumBackgroundTasks: String?
    @Option(name: .knob("allowedCapabilities"), help: .knob("allowedCapabilities")) var allowedCapabilities: [String] = []
    @Option(name: .knob("openFileLimit"), help: .knob("openFileLimit")) var openFileLimit: String?
    @Option(name: .knob("processLimit"), help: .knob("processLimit")) var processLimit: String?
    @Option(name: .knob("maximumViolations"), help: .knob("maximumViolations")) var maximumViolations: String?
    @Flag(name: .knob("perAppUsers"), inversion: .prefixedNo, help: .knob("perAppUsers")) var perAppUsers: Bool?
    @Option(name: .knob("appUserRange"), help: .knob("appUserRange")) var appUserRange: String?
    @Option(name: .knob("foregroundMemoryLimit"), help: .knob("foregroundMemoryLimit")) var foregroundMemoryLimit: String?
    @Option(name: .knob("backgroundMemoryLimit"), help: .knob("backgroundMemoryLimit")) var backgroundMemoryLimit: String?
    @Option(name: .knob("memoryBudget"), help: .knob("memoryBudget")) var memoryBudget: String?
    @Option(name: .knob("memoryWarningGrace"), help: .knob("memoryWarningGrace")) var memoryWarningGrace: String?
    @Option(name: .knob("resourceSampleInterval"), help: .knob("resourceSampleInterval")) var resourceSampleInterval: String?
    @Option(name: .knob("backgroundCPULimit"), help: .knob("backgroundCPULimit")) var backgroundCPULimit: String?
    @Option(name: .knob("backgroundCPUWindow"), help: .knob("backgroundCPUWindow")) var backgroundCPUWindow: String?
    @Option(name: .knob("sharedResources"), help: .knob("sharedResources")) var sharedResources: [String] = []
    @Option(name: .knob("backgroundFetchTime"), help: .knob("backgroundFetchTime")) var backgroundFetchTime: String?
    @Option(name: .knob("backgroundURLSessionTime"), help: .knob("backgroundURLSessionTime")) var backgroundURLSessionTime: String?
    @Option(name: .knob("appRefreshTaskTime"), help: .knob("appRefreshTaskTime")) var appRefreshTaskTime: String?
    @Option(name: .knob("processingTaskTime"), help: .knob("processingTaskTime")) var processingTaskTime: String?
    @Option(name: .knob("minimumBackgroundFetchInterval"), help: .knob("minimumBackgroundFetchInterval"))
    var minimumBackgroundFetchInterval: String?
    @Option(name: .knob("minimumRefreshTaskInterval"), help: .knob("minimumRefreshTaskInterval"))
    var minimumRefreshTaskInterval: String?
    @Option(name: .knob("minimumProcessingTaskInterval"), help: .knob("minimumProcessingTaskInterval"))
    var minimumProcessingTaskInterval: String?
    @Option(name: .knob("maximumPendingRefreshRequests"), help: .knob("maximumPendingRefreshRequests"))
    var maximumPendingRefreshRequests: String?
    @Option(name: .knob("maximumPendingProcessingRequests"), help: .knob("maximumPendingProcessingRequests"))
    var maximumPendingProcessingRequests: String?
    @Option(name: .knob("voipResumeLimit"), help: .knob("voipResumeLimit")) var voipResumeLimit: String?
    @Option(name: .knob("voipResumeWindow"), help: .knob("voipResumeWindow")) var voipResumeWindow: String?
    @Option(name: .knob("continuousHoldLimit"), help: .knob("continuousHoldLimit")) var continuousHoldLimit: String?
    @Option(name: .knob("unpushedCallLimit"), help: .knob("unpushedCallLimit")) var unpushedCallLimit: String?
    @Option(name: .knob("locationUpdateInterval"), help: .knob("locationUpdateInterval")) var locationUpdateInterval: String?
    @Option(name: .knob("storageLimit"), help: .knob("storageLimit")) var storageLimit: String?
    @Option(name: .knob("appGroupStorageLimit"), help: .knob("appGroupStorageLimit")) var appGroupStorageLimit: String?

    func validate() throws {
        let declared = Set(values.map(\.key))
        let knobs = Set(Policy.knobs.map(\.key))
        precondition(declared == knobs, """
            PolicyOptions and Policy.knobs disagree: knobs without a flag: \(knobs.subtracting(declared).sorted()); \
            flags without a knob: \(declared.subtracting(knobs).sorted())
            """)
    }

    /// Every declared knob's key with the words given for its flag (none if not given), found
    /// by reflection as ArgumentParser finds its options: `_backgroundTime` is `backgroundTime`.
    var values: [(key: String, words: [String])] {
        Mirror(reflecting: self).children.map { child in
            let key = String((child.label ?? "").drop(while: { $0 == "_" }))
            switch child.value {
            case let option as Option<String?>: return (key, option.wrappedValue.map { [$0] } ?? [])
            case let option as Option<[String]>: return (key, option.wrappedValue)
            case let flag as Flag<Bool?>: return (key, flag.wrappedValue.map { [String($0)] } ?? [])
            default: preconditionFailure("PolicyOptions.\(key) is not an option of a kind Policy.applying(commandLine:) reads")
            }
        }
    }
}

extension NameSpecification {
    /// The long flag of a knob of `Policy.knobs`, by its policy-file key.
    static func knob(_ key: String) -> NameSpecification {
        .customLong(Policy.knob(key).flag)
    }
}

extension ArgumentHelp {
    /// The help of a knob of `Policy.knobs`, by its policy-file key: its line, its default and
    /// its value's name.
    static func knob(_ key: String) -> ArgumentHelp {
        let knob = Policy.knob(key)
        return ArgumentHelp(knob.flagHelp, valueName: knob.valueName)
    }
}
