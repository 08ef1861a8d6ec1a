// UIKit's names for AppHostKit's life-cycle subset, so that iOS code that uses only that subset
// compiles unchanged with `import UIKit`: the application and its delegate, background tasks,
// launch options, the life-cycle notifications, scenes (an app declaring
// UIApplicationSceneManifest is driven through its scene delegates), and the UI a delegate sets
// up, as headless objects (UserInterface.swift). As on iOS, importing UIKit imports Foundation
// too (docs/porting.md, "Porting iOS code").
@_exported public import AppHostKit
@_exported public import Foundation

/// `UIApplication`: the running app (`UIApplication.shared`), its state and background time.
public typealias UIApplication = Application
/// `UIBackgroundTaskIdentifier`, with `.invalid`.
public typealias UIBackgroundTaskIdentifier = BackgroundTaskIdentifier
/// `UIBackgroundFetchResult`: `.newData`, `.noData`, `.failed`.
public typealias UIBackgroundFetchResult = Application.BackgroundFetchResult
/// `UIScene`.
public typealias UIScene = Scene
/// `UIWindowScene`.
public typealias UIWindowScene = WindowScene
/// `UISceneSession`, with `UISceneSession.Role.windowApplication`.
public typealias UISceneSession = SceneSession
/// `UISceneConfiguration`.
public typealias UISceneConfiguration = SceneConfiguration
/// `NSUserActivity`, as state restoration uses it (`activityType`, `userInfo`, `title`).
public typealias NSUserActivity = UserActivity

/// The object that gets the app's life-cycle callbacks, as UIKit's `UIApplicationDelegate`: a
/// protocol of this name in this module, as `@UIApplicationMain` requires. Its methods are
/// `ApplicationDelegateCallbacks`' (each optional). Unlike AppHostKit's `ApplicationDelegate` it
/// does not require `init()`, so `class AppDelegate: NSObject, UIApplicationDelegate` (as a
/// SwiftUI app's adaptor is written) and `UIResponder` subclasses conform; the SDK creates them
/// with their `init()` all the same.
@MainActor
public protocol UIApplicationDelegate: ApplicationDelegateCallbacks {}

/// `UISceneDelegate`: one scene's life-cycle callbacks (`SceneDelegateCallbacks`), without an
/// `init()` requirement, as `UIApplicationDelegate`.
@MainActor
public protocol UISceneDelegate: SceneDelegateCallbacks {}

/// `UIWindowSceneDelegate`: a scene delegate with a window.
@MainActor
public protocol UIWindowSceneDelegate: UISceneDelegate {
    /// The scene's main window.
    var window: UIWindow? { get set }
}

extension UIWindowSceneDelegate {
    /// Nil, and setting it keeps nothing, unless the delegate declares `var window: UIWindow?`
    /// (UIKit's requirement is optional; Xcode's template declares it).
    public var window: UIWindow? {
        get { nil }
        set {}
    }
}

/// `UIResponder`, the base class Xcode's templates give the app and scene delegates: an
/// `NSObject`, as on iOS, so that a delegate may `override init()`. It holds nothing here: there
/// are no UI events to respond to.
@MainActor
open class UIResponder: NSObject {
    public override init() { super.init() }
}
