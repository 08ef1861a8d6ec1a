public import Foundation

// Scenes, as UIKit's UIScene family. An app whose Info.plist declares UIApplicationSceneManifest
// is driven through its scene delegates (SceneLifecycle.swift; docs/lifecycle.md, "Scenes").

/// One instance of the app's user interface, as `UIScene`: the SDK creates it when its session
/// connects, from the configuration `application(_:configurationForConnecting:options:)` returns.
@MainActor
open class Scene: Hashable {
    /// What the system passes to `scene(_:willConnectTo:options:)`, as `UIScene.ConnectionOptions`.
    @MainActor
    open class ConnectionOptions {
        public init() {}
    }

    /// What UIKit calls `UIScene.ActivationState`: raw values as UIKit's.
    public enum ActivationState: Int, Sendable {
        case unattached = -1
        case foregroundActive = 0
        case foregroundInactive = 1
        case background = 2
    }

    /// The session this scene belongs to.
    public let session: SceneSession
    /// The scene's delegate, created from the scene configuration's delegate class.
    open var delegate: (any SceneDelegateCallbacks)?
    /// Where the scene is in its life cycle.
    open internal(set) var activationState: ActivationState = .unattached
    /// The scene's title, as the app switcher would show it.
    open var title: String = ""

    /// A scene of `session`, connected with `connectionOptions`.
    public required init(session: SceneSession, connectionOptions: ConnectionOptions) {
        self.session = session
    }

    public nonisolated static func == (lhs: Scene, rhs: Scene) -> Bool { lhs === rhs }
    public nonisolated func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A scene that holds windows, as `UIWindowScene`.
@MainActor
open class WindowScene: Scene {
    /// The scene's windows, in the order they were attached.
    open internal(set) var windows: [Window] = []
}

/// A scene's persistent record: its role and configuration, surviving disconnection, as
/// `UISceneSession`.
@MainActor
public final class SceneSession: Hashable {
    /// A scene session's role, as `UISceneSession.Role`: an open set.
    public struct Role: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The app's main interactive window, as `.windowApplication`.
        public static let windowApplication = Role(rawValue: "UIWindowSceneSessionRoleApplication")
    }

    /// Unique for the session's lifetime, across launches.
    public nonisolated let persistentIdentifier: String
    /// The session's role.
    public let role: Role
    /// The configuration the scene was created with.
    public internal(set) var configuration: SceneConfiguration
    /// The session's scene while one is connected.
    public internal(set) weak var scene: Scene?
    /// Data the app keeps with the session, as `UISceneSession.userInfo`: kept by the host
    /// across launches and hosts (JSON values: strings, numbers, Booleans, arrays, dictionaries).
    public var userInfo: [String: Any]?
    /// What the scene's delegate returned from `stateRestorationActivity(for:)` when the scene
    /// last went to the background; handed back when the session reconnects, after a relaunch too.
    public internal(set) var stateRestorationActivity: UserActivity?

    init(persistentIdentifier: String, role: Role, configuration: SceneConfiguration) {
        self.persistentIdentifier = persistentIdentifier
        self.role = role
        self.configuration = configuration
    }

    public nonisolated static func == (lhs: SceneSession, rhs: SceneSession) -> Bool { lhs === rhs }
    public nonisolated func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The configuration a scene is created with, as `UISceneConfiguration`: normally named after
/// an entry of Info.plist's `UIApplicationSceneManifest`.
@MainActor
public final class SceneConfiguration {
    /// The configuration's name in the scene manifest; nil for one made in code.
    public let name: String?
    /// The role of the sessions it configures.
    public let role: SceneSession.Role
    /// The scene's class: `WindowScene` unless set.
    public var sceneClass: AnyClass?
    /// The scene delegate's class.
    public var delegateClass: AnyClass?

    /// A configuration named `name` (the manifest's entry supplies the classes) for `sessionRole`.
    public init(name: String?, sessionRole: SceneSession.Role) {
        self.name = name
        self.role = sessionRole
    }
}

/// The object that responds to one scene's life-cycle events, as `UISceneDelegate`. Every method
/// is optional. Needs `init()`, as UIKit creates it from the configuration's class.
@MainActor
public protocol SceneDelegate: SceneDelegateCallbacks {
    /// What the SDK creates the delegate with.
    init()
}

/// `SceneDelegate`'s methods without its `init()`: what UIKit's `UISceneDelegate` refines (its
/// delegates subclass `UIResponder`, whose `init()` is not `required`, as on iOS).
@MainActor
public protocol SceneDelegateCallbacks: AnyObject {
    /// The scene is being added to the app: attach windows here.
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions)
    /// The scene was released (its session may reconnect later).
    func sceneDidDisconnect(_ scene: Scene)
    /// The scene is in the foreground and receives events.
    func sceneDidBecomeActive(_ scene: Scene)
    /// The scene is about to stop receiving events.
    func sceneWillResignActive(_ scene: Scene)
    /// The scene is about to come to the foreground.
    func sceneWillEnterForeground(_ scene: Scene)
    /// The scene is in the background: save its state.
    func sceneDidEnterBackground(_ scene: Scene)
    /// What to restore the scene from when its session reconnects (asked when the scene goes
    /// to the background), as `UISceneDelegate.stateRestorationActivity(for:)`.
    func stateRestorationActivity(for scene: Scene) -> UserActivity?
}

extension SceneDelegateCallbacks {
    public func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: Scene.ConnectionOptions) {}
    public func sceneDidDisconnect(_ scene: Scene) {}
    public func sceneDidBecomeActive(_ scene: Scene) {}
    public func sceneWillResignActive(_ scene: Scene) {}
    public func sceneWillEnterForeground(_ scene: Scene) {}
    public func sceneDidEnterBackground(_ scene: Scene) {}
    public func stateRestorationActivity(for scene: Scene) -> UserActivity? { nil }
}

/// An activity to restore a scene from, as `NSUserActivity` serves state restoration: its type
/// and a dictionary of JSON values.
@MainActor
public final class UserActivity {
    /// What the user was doing, in reverse-DNS form, e.g. com.example.notes.editing.
    public let activityType: String
    /// What restores it (JSON values: strings, numbers, Booleans, arrays, dictionaries).
    public var userInfo: [AnyHashable: Any]?
    /// A title for it.
    public var title: String?

    /// An activity of `activityType`.
    public init(activityType: String) {
        self.activityType = activityType
    }
}

/// A scene delegate that manages a window scene, as `UIWindowSceneDelegate`.
@MainActor
public protocol WindowSceneDelegate: SceneDelegate {
    /// The scene's main window.
    var window: Window? { get set }
}

extension WindowSceneDelegate {
    /// Nil, and setting it keeps nothing, unless the delegate declares `var window: Window?`
    /// (UIKit's requirement is optional; Xcode's template declares it).
    public var window: Window? {
        get { nil }
        set {}
    }
}

extension Window {
    /// A window in `windowScene`, as `UIWindow(windowScene:)`.
    public convenience init(windowScene: WindowScene) {
        self.init()
        windowScene.windows.append(self)
    }
}

extension Scene {
    /// Posted after `scene(_:willConnectTo:options:)`, with the scene as its object (each scene
    /// notification is posted after the matching scene-delegate method, as UIKit does).
    public nonisolated static let willConnectNotification = Notification.Name("UISceneWillConnectNotification")
    /// Posted after `sceneDidDisconnect(_:)`.
    public nonisolated static let didDisconnectNotification = Notification.Name("UISceneDidDisconnectNotification")
    /// Posted after `sceneDidBecomeActive(_:)`.
    public nonisolated static let didActivateNotification = Notification.Name("UISceneDidActivateNotification")
    /// Posted after `sceneWillResignActive(_:)`.
    public nonisolated static let willDeactivateNotification = Notification.Name("UISceneWillDeactivateNotification")
    /// Posted after `sceneWillEnterForeground(_:)`.
    public nonisolated static let willEnterForegroundNotification = Notification.Name("UISceneWillEnterForegroundNotification")
    /// Posted after `sceneDidEnterBackground(_:)`.
    public nonisolated static let didEnterBackgroundNotification = Notification.Name("UISceneDidEnterBackgroundNotification")
}
