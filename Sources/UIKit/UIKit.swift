// UIKit's names for AppHostKit's life-cycle subset, so that iOS code that uses only that subset
// compiles unchanged with `import UIKit`: the application and its delegate, background tasks,
// launch options, the life-cycle notifications, scenes (an app declaring
// UIApplicationSceneManifest is driven through its scene delegates), windows as AppHostKit has
// them. Views, view controllers and UI events are deliberately absent (README.md, "Porting iOS
// code"). As on iOS, importing UIKit imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation

/// `UIApplication`: the running app (`UIApplication.shared`), its state and background time.
public typealias UIApplication = Application
/// `UIApplicationDelegate`: the object that gets the app's life-cycle callbacks.
public typealias UIApplicationDelegate = ApplicationDelegate
/// `UIBackgroundTaskIdentifier`, with `.invalid`.
public typealias UIBackgroundTaskIdentifier = BackgroundTaskIdentifier
/// `UIBackgroundFetchResult`: `.newData`, `.noData`, `.failed`.
public typealias UIBackgroundFetchResult = Application.BackgroundFetchResult
/// `UIWindow`: what the app shows, as text; the visible windows make up its snapshot.
public typealias UIWindow = Window
/// `UIScene`.
public typealias UIScene = Scene
/// `UIWindowScene`.
public typealias UIWindowScene = WindowScene
/// `UISceneSession`, with `UISceneSession.Role.windowApplication`.
public typealias UISceneSession = SceneSession
/// `UISceneConfiguration`.
public typealias UISceneConfiguration = SceneConfiguration
/// `UISceneDelegate`.
public typealias UISceneDelegate = SceneDelegate
/// `UIWindowSceneDelegate`.
public typealias UIWindowSceneDelegate = WindowSceneDelegate
/// `NSUserActivity`, as state restoration uses it (`activityType`, `userInfo`, `title`).
public typealias NSUserActivity = UserActivity

/// `UIResponder`, the base class Xcode's templates give the app and scene delegates. It holds
/// nothing here: there are no UI events to respond to.
@MainActor
open class UIResponder {
    /// What UIKit calls to create a delegate from its class.
    public required init() {}
}
