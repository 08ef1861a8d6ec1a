public import Foundation
package import AppHostProtocol
import AppHostSandbox

/// An app bundle on disk, `Name.app/` with `Info.plist` and the plugin. The supervisor reads it as
/// data only: it never loads the plugin (the supervisor never runs app code).
public struct AppBundle: Sendable, Equatable {
    public var url: URL
    /// `CFBundleIdentifier`, e.g. com.example.notes.
    public var identifier: String
    /// `CFBundleName`, or the bundle's directory name without `.app`.
    public var name: String
    /// Whether Info.plist has no `CFBundleName`, and the app is named after its directory
    /// (the host says so when it installs the app).
    public var nameIsDirectoryName = false
    /// The plugin, from `CFBundleExecutable`.
    public var pluginURL: URL
    /// `ApplicationDelegateClassName`, e.g. Notes.AppDelegate.
    public var delegateClassName: String
    /// `AppHostCapabilities`: capabilities the app asks to keep, e.g. CAP_NET_BIND_SERVICE.
    /// The host grants them only if its policy allows each one.
    public var capabilities: [String]
    /// `AppHostEntitlements`: what the sandbox lets the app do beyond the base profile, e.g.
    /// `com.apple.security.network.client` (raw values of SyscallProfile.Entitlement).
    public var entitlements: Set<String>
    /// `com.apple.security.application-groups` inside `AppHostEntitlements`: the app groups whose
    /// shared containers the app may read and write.
    public var appGroups: [String]
    /// `UIBackgroundModes`: the background execution modes the app declares.
    public var backgroundModes: Set<BackgroundMode>
    /// `BGTaskSchedulerPermittedIdentifiers`: the identifiers the app may register and submit
    /// BGTaskScheduler tasks under.
    public var permittedTaskIdentifiers: [String]
    /// `UIApplicationSceneManifest`: the app adopts scenes (docs/lifecycle.md, "Scenes"); nil: the
    /// app-delegate life cycle applies.
    package var sceneManifest: WireSceneManifest?
    /// Whether the app adopts scenes (declares `UIApplicationSceneManifest`).
    public var adoptsScenes: Bool { sceneManifest != nil }

    /// How an app's package makes its bundle, for the errors that send the user there.
    static let bundleCommand = "swift package --allow-writing-to-package-directory bundle-app --product NAME --output DIR"

    /// Reads and validates `Name.app/Info.plist`. Every error says what is wrong and how to fix it.
    public init(url: URL) throws(BundleError) {
        let url = url.standardizedFileURL
        let label = url.lastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw BundleError("\(url.path): no such app bundle; build one in the app's package with `\(Self.bundleCommand)`")
        }
        guard isDirectory.boolValue else {
            throw BundleError("\(url.path): not an app bundle (a directory Name.app with an Info.plist)")
        }
        let plistURL = url.appendingPathComponent("Info.plist")
        guard let data = FileManager.default.contents(atPath: plistURL.path) else {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                throw BundleError("\(url.path) is a package, not an app bundle; build the bundle in it with `\(Self.bundleCommand)`")
            }
            throw BundleError("\(label)/Info.plist is missing; an app bundle needs one")
        }
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw BundleError("\(label)/Info.plist is not a valid property list: \(Self.describe(error))")
        }
        guard let plist = object as? [String: Any] else {
            throw BundleError("\(label)/Info.plist must be a dictionary at the top level")
        }
        func string(_ key: String, example: String, purpose: String) throws(BundleError) -> String {
            guard let value = plist[key] else {
                throw BundleError("\(label)/Info.plist: \(key) is missing; \(purpose), e.g. \(example)")
            }
            guard let text = value as? String, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw BundleError("\(label)/Info.plist: \(key) must be a non-empty string; \(purpose), e.g. \(example)")
            }
            return text
        }
        let directoryName = String(label.hasSuffix(".app") ? label.dropLast(4) : Substring(label))
        identifier = try string("CFBundleIdentifier", example: "com.example.\(directoryName.lowercased())", purpose: "give the app a unique reverse-DNS identifier")
        nameIsDirectoryName = plist["CFBundleName"] == nil
        name = nameIsDirectoryName
            ? directoryName
            : try string("CFBundleName", example: directoryName, purpose: "name the app")
        // The class is qualified by the plugin's module, which SwiftPM names after the target
        // (libHelloExample.so is HelloExample's), not by the app's name.
        let module = Self.moduleName(ofPlugin: plist["CFBundleExecutable"] as? String) ?? name
        delegateClassName = try string(
            "ApplicationDelegateClassName", example: "\(module).AppDelegate",
            purpose: "name the class that conforms to ApplicationDelegate")
        // An Info.plist beside the sources (Sources/Name/Info.plist) has none: bundle-app adds it.
        if plist["CFBundleExecutable"] == nil, !label.hasSuffix(".app") {
            throw BundleError(
                "\(label)/Info.plist has no CFBundleExecutable: this is an app's sources, not its bundle; "
                    + "build the bundle in its package with `\(Self.bundleCommand)`")
        }
        let executable = try string("CFBundleExecutable", example: "lib\(name).so", purpose: "name the plugin inside the bundle")
        guard !executable.contains("/") else {
            throw BundleError("\(label)/Info.plist: CFBundleExecutable must name a file inside the bundle, not a path")
        }
        switch plist["AppHostCapabilities"] {
        case nil: capabilities = []
        case let names as [String]: capabilities = names
        default:
            throw BundleError("\(label)/Info.plist: AppHostCapabilities must be an array of capability names, e.g. CAP_NET_BIND_SERVICE")
        }
        (entitlements, appGroups) = try Self.entitlements(plist["AppHostEntitlements"], label: label)
        (backgroundModes, permittedTaskIdentifiers) = try Self.backgroundExecution(
            modes: plist["UIBackgroundModes"], identifiers: plist["BGTaskSchedulerPermittedIdentifiers"], label: label)
        sceneManifest = try Self.sceneManifest(plist["UIApplicationSceneManifest"], label: label, module: name)
        pluginURL = url.appendingPathComponent(executable)
        guard FileManager.default.isReadableFile(atPath: pluginURL.path) else {
            throw BundleError("\(label)/\(executable) is missing (named by CFBundleExecutable); rebuild the bundle")
        }
        guard identifier.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else {
            throw BundleError("\(label)/Info.plist: CFBundleIdentifier \(identifier) may hold only letters, digits, '.' and '-'")
        }
        self.url = url
    }

    /// The key app groups are listed under, as in Apple's entitlements.
    public static let applicationGroupsKey = "com.apple.security.application-groups"

    private static func entitlements(_ value: Any?, label: String) throws(BundleError) -> (Set<String>, [String]) {
        guard let value else { return ([], []) }
        let known = SyscallProfile.Entitlement.allCases.map(\.rawValue) + [applicationGroupsKey]
        guard let dictionary = value as? [String: Any] else {
            throw BundleError("\(label)/Info.plist: AppHostEntitlements must be a dictionary of \(known.joined(separator: ", "))")
        }
        var granted: Set<String> = []
        var groups: [String] = []
        for (key, entry) in dictionary.sorted(by: { $0.key < $1.key }) {
            if key == applicationGroupsKey {
                guard let names = entry as? [String], names.allSatisfy({ !$0.isEmpty && !$0.contains("/") && $0 != "." && $0 != ".." }) else {
                    throw BundleError("\(label)/Info.plist: \(key) must be an array of group identifiers such as group.com.example.shared")
                }
                groups = names
            } else if SyscallProfile.Entitlement(rawValue: key) != nil {
                guard let flag = entry as? Bool else { throw BundleError("\(label)/Info.plist: AppHostEntitlements \(key) must be a Boolean") }
                if flag { granted.insert(key) }
            } else {
                throw BundleError("\(label)/Info.plist: AppHostEntitlements has unknown key \(key); known keys: \(known.joined(separator: ", "))")
            }
        }
        return (granted, groups)
    }

    /// `UIBackgroundModes` and `BGTaskSchedulerPermittedIdentifiers`, checked together as iOS's
    /// app validation does: task identifiers need a mode that runs tasks, and the processing
    /// mode needs identifiers.
    private static func backgroundExecution(modes: Any?, identifiers: Any?, label: String) throws(BundleError) -> (Set<BackgroundMode>, [String]) {
        let known = BackgroundMode.allCases.map(\.rawValue).joined(separator: ", ")
        var declared: Set<BackgroundMode> = []
        if let modes {
            guard let names = modes as? [String] else {
                throw BundleError("\(label)/Info.plist: UIBackgroundModes must be an array of modes: \(known)")
            }
            for name in names {
                guard let mode = BackgroundMode(rawValue: name) else {
                    throw BundleError("\(label)/Info.plist: UIBackgroundModes has \(name), which apphost does not run; known modes: \(known)")
                }
                declared.insert(mode)
            }
        }
        var permitted: [String] = []
        if let identifiers {
            guard let names = identifiers as? [String], names.allSatisfy({ !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
                throw BundleError("\(label)/Info.plist: BGTaskSchedulerPermittedIdentifiers must be an array of task identifiers such as com.example.refresh")
            }
            if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
                throw BundleError("\(label)/Info.plist: BGTaskSchedulerPermittedIdentifiers lists \(repeated) twice")
            }
            permitted = names
        }
        if !permitted.isEmpty && declared.isDisjoint(with: [.fetch, .processing]) {
            throw BundleError(
                "\(label)/Info.plist: BGTaskSchedulerPermittedIdentifiers needs UIBackgroundModes fetch (for app refresh tasks) or processing (for processing tasks)")
        }
        if declared.contains(.processing) && permitted.isEmpty {
            throw BundleError(
                "\(label)/Info.plist: UIBackgroundModes processing needs BGTaskSchedulerPermittedIdentifiers listing the identifiers of its tasks")
        }
        return (declared, permitted)
    }

    /// `UIApplicationSceneManifest`, read by the one parser the SDK shares (WireSceneManifest).
    private static func sceneManifest(_ value: Any?, label: String, module: String) throws(BundleError) -> WireSceneManifest? {
        guard let value else { return nil }
        do {
            return try WireSceneManifest(infoPlistValue: value, module: module)
        } catch {
            throw BundleError("\(label)/Info.plist: \(error.description)")
        }
    }

    /// The Swift module a plugin file was built from, as SwiftPM names a dynamic library
    /// product's file: `libHelloExample.so` is HelloExample's. Nil for another kind of name.
    static func moduleName(ofPlugin file: String?) -> String? {
        guard let file, file.hasPrefix("lib"), file.hasSuffix(".so"), file.count > 6 else { return nil }
        let module = file.dropFirst(3).dropLast(3)
        return module.contains("/") ? nil : String(module)
    }

    private static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
    }
}

/// A background execution mode of Info.plist `UIBackgroundModes`.
public enum BackgroundMode: String, Sendable, CaseIterable, Hashable {
    /// Background fetch, and BGAppRefreshTask.
    case fetch
    /// BGProcessingTask.
    case processing
    /// Background pushes (content-available).
    case remoteNotification = "remote-notification"
    /// Playing audio keeps the app running in the background (AVAudioSession, category playback).
    case audio
    /// Location updates keep the app running in the background (CLLocationManager with
    /// `allowsBackgroundLocationUpdates`).
    case location
    /// PushKit VoIP pushes, and an active CallKit call keeps the app running.
    case voip
}

/// A bundle that cannot be launched, with a message naming the file and the fix.
public struct BundleError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ description: String) { self.description = description }
}
