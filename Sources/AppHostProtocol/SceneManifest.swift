// Info.plist's UIApplicationSceneManifest, read by one parser for both sides: the host validates
// it with the bundle (AppBundle) and refuses a bad one in one line; DetachedApplication reads its
// Info.plist dictionary the same way.

import Foundation

/// Why a `UIApplicationSceneManifest` is refused: one line naming the key and the fix.
package struct SceneManifestError: Error, CustomStringConvertible, Equatable {
    package var description: String
    init(_ description: String) { self.description = description }
}

extension WireSceneManifest {
    /// The application role, the one session role apphost connects scenes for.
    package static let applicationRole = "UIWindowSceneSessionRoleApplication"

    /// `UIApplicationSceneManifest`: `UIApplicationSupportsMultipleScenes` (a Boolean, false if
    /// absent) and `UISceneConfigurations` (the application role's configurations, each with a
    /// unique `UISceneConfigurationName` and a `UISceneDelegateClassName`). Keys apphost has no use
    /// for (`UISceneStoryboardFile`) are ignored, as a storyboard is nothing here. `module` names
    /// the app's module in the examples the messages give.
    package init(infoPlistValue value: Any, module: String) throws(SceneManifestError) {
        let key = "UIApplicationSceneManifest"
        let role = Self.applicationRole
        let example = "{UISceneConfigurationName: Default Configuration, UISceneDelegateClassName: \(module).SceneDelegate}"
        guard let manifest = value as? [String: Any] else {
            throw SceneManifestError("\(key) must be a dictionary with UIApplicationSupportsMultipleScenes and UISceneConfigurations")
        }
        supportsMultipleScenes = false
        configurations = []
        if let flag = manifest["UIApplicationSupportsMultipleScenes"] {
            guard let flag = flag as? Bool else {
                throw SceneManifestError("\(key) UIApplicationSupportsMultipleScenes must be a Boolean")
            }
            supportsMultipleScenes = flag
        }
        guard let roles = manifest["UISceneConfigurations"] else { return }
        guard let byRole = roles as? [String: Any] else {
            throw SceneManifestError("\(key) UISceneConfigurations must be a dictionary keyed by session role, e.g. \(role)")
        }
        if let other = byRole.keys.sorted().first(where: { $0 != role }) {
            throw SceneManifestError("\(key) UISceneConfigurations has role \(other), which apphost does not connect; the one role is \(role)")
        }
        guard let entries = byRole[role] else { return }
        let path = "\(key) UISceneConfigurations \(role)"
        guard let list = entries as? [Any], !list.isEmpty else {
            throw SceneManifestError("\(path) must be a non-empty array of configurations, e.g. \(example)")
        }
        for (index, entry) in list.enumerated() {
            guard let entry = entry as? [String: Any] else {
                throw SceneManifestError("\(path) item \(index) must be a dictionary, e.g. \(example)")
            }
            func text(_ name: String) throws(SceneManifestError) -> String? {
                guard let value = entry[name] else { return nil }
                guard let text = value as? String, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw SceneManifestError("\(path) item \(index): \(name) must be a non-empty string, e.g. \(example)")
                }
                return text
            }
            guard let name = try text("UISceneConfigurationName") else {
                throw SceneManifestError("\(path) item \(index): UISceneConfigurationName is missing; name the configuration, e.g. Default Configuration")
            }
            guard let delegate = try text("UISceneDelegateClassName") else {
                throw SceneManifestError(
                    "\(path) \(name): UISceneDelegateClassName is missing; name the class that conforms to UIWindowSceneDelegate, e.g. \(module).SceneDelegate")
            }
            let sceneClass = try text("UISceneClassName")
            if let sceneClass, !["UIWindowScene", "WindowScene"].contains(sceneClass) {
                throw SceneManifestError("\(path) \(name): UISceneClassName \(sceneClass) is not a scene class apphost makes; use UIWindowScene or leave it out")
            }
            if configurations.contains(where: { $0.name == name }) {
                throw SceneManifestError("\(path) names configuration \(name) twice; each UISceneConfigurationName must be unique")
            }
            configurations.append(.init(name: name, delegateClassName: delegate, sceneClassName: sceneClass))
        }
    }
}
