public import Foundation
import AppHostSandbox

/// Every budget of LIFECYCLE.md's time-limit table, with the spec's defaults. Set from the
/// command line (`apphost launch --background-time 3 …`) or a policy file (`--policy FILE`).
///
/// A policy file is a JSON object whose keys are the property names below and whose values are
/// seconds (or a count, for `maximumBackgroundTasks`); keys left out keep their defaults:
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
    /// All of an app's background tasks together, from entering the background.
    public var backgroundTime: Duration = .seconds(30)
    /// Expiration handlers run this long before the background time ends.
    public var expirationWarning: Duration = .seconds(5)
    /// How long after the background time ends the app may still hold tasks before it is killed.
    public var expirationGrace: Duration = .seconds(5)
    /// More open background tasks than this in one app: killed with 0xbada5e47.
    public var maximumBackgroundTasks = 1000
    /// Capabilities a bundle may ask for (Info.plist `AppHostCapabilities`), e.g.
    /// CAP_NET_BIND_SERVICE. Apps hold no capability unless asked for and allowed here.
    public var allowedCapabilities: [String] = []
    /// RLIMIT_NOFILE of each app process.
    public var openFileLimit = 1024

    public init() {}

    /// The keys of a policy file, each with its setter.
    nonisolated(unsafe) static let fileKeys: [String: WritableKeyPath<Policy, Duration>] = [
        "launchTimeout": \.launchTimeout,
        "callbackTimeout": \.callbackTimeout,
        "didEnterBackgroundTimeout": \.didEnterBackgroundTimeout,
        "willTerminateTimeout": \.willTerminateTimeout,
        "backgroundTime": \.backgroundTime,
        "expirationWarning": \.expirationWarning,
        "expirationGrace": \.expirationGrace,
    ]

    /// Reads a policy file over the defaults. Unknown keys and non-positive numbers are errors,
    /// so a typo never silently leaves a default in force.
    public static func load(contentsOf url: URL, over base: Policy = Policy()) throws(PolicyError) -> Policy {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw PolicyError("\(url.path): cannot be read: \(error.localizedDescription)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data), let values = object as? [String: Any] else {
            throw PolicyError("\(url.path): not a JSON object; see README.md, \"Policy\"")
        }
        var policy = base
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            if key == "allowedCapabilities" {
                guard let names = value as? [String] else {
                    throw PolicyError("\(url.path): allowedCapabilities must be an array of names such as CAP_NET_BIND_SERVICE")
                }
                policy.allowedCapabilities = names
                continue
            }
            guard let number = value as? NSNumber, !(value is Bool) else {
                throw PolicyError("\(url.path): \(key) must be a number")
            }
            if key == "maximumBackgroundTasks" || key == "openFileLimit" {
                guard number.intValue > 0 else { throw PolicyError("\(url.path): \(key) must be positive") }
                if key == "openFileLimit" { policy.openFileLimit = number.intValue } else { policy.maximumBackgroundTasks = number.intValue }
            } else if let path = fileKeys[key] {
                guard number.doubleValue > 0 else { throw PolicyError("\(url.path): \(key) must be positive seconds") }
                policy[keyPath: path] = .seconds(double: number.doubleValue)
            } else {
                let known = (Array(fileKeys.keys) + ["maximumBackgroundTasks", "allowedCapabilities", "openFileLimit"]).sorted().joined(separator: ", ")
                throw PolicyError("\(url.path): unknown key \(key); known keys: \(known)")
            }
        }
        try policy.validate()
        return policy
    }

    /// Checks that the budgets fit together.
    public func validate() throws(PolicyError) {
        for name in allowedCapabilities where Capabilities.value(named: name) == nil {
            throw PolicyError("allowedCapabilities: \(name) is not a capability this kernel knows (see capabilities(7))")
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
