#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem

/// The object that responds to the life-cycle events of an app, as `UIApplicationDelegate` does.
///
/// Name the conforming class in Info.plist under `ApplicationDelegateClassName`
/// (`Module.ClassName`, e.g. `Notes.AppDelegate`); the SDK creates it with `init()` when the app
/// process starts. Every method is optional and runs on the main queue. Each must return promptly:
/// the host's watchdog terminates an app whose callback overruns its budget (0x8badf00d).
@MainActor
public protocol ApplicationDelegate: ApplicationDelegateCallbacks {
    /// What the SDK creates the delegate with.
    init()
}

/// `ApplicationDelegate`'s callbacks without its `init()`: what UIKit's `UIApplicationDelegate`
/// refines. UIKit's delegates subclass `UIResponder` or `NSObject`, whose `init()` is not
/// `required`, so they cannot satisfy an `init()` requirement; the SDK creates such a class
/// through the `init()` it inherits the slot of (`ClassInstantiation`).
@MainActor
public protocol ApplicationDelegateCallbacks: AnyObject {
    /// The launch has begun; return false to fail it (the host writes a report).
    func application(
        _ application: Application, willFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool
    /// The launch is nearly done; the app's state is `.inactive`, or `.background` for a launch
    /// into the background. Return false to fail the launch.
    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool
    /// The app is in the foreground and receives events; state `.active`.
    func applicationDidBecomeActive(_ application: Application)
    /// The app is about to stop receiving events: an interruption, or on its way to the background.
    func applicationWillResignActive(_ application: Application)
    /// The app is in the background (state `.background`) and will be suspended when this returns,
    /// unless it holds a background task. Save state here; 5 s by default.
    func applicationDidEnterBackground(_ application: Application)
    /// The app is about to come to the foreground; state is still `.background`.
    func applicationWillEnterForeground(_ application: Application)
    /// The host is terminating the running app; 5 s by default, then the process ends.
    /// A suspended app is terminated without this call.
    func applicationWillTerminate(_ application: Application)
    /// Memory is short: release what can be rebuilt.
    func applicationDidReceiveMemoryWarning(_ application: Application)
    /// A background fetch (Info.plist `UIBackgroundModes` has `fetch`): fetch new content, then
    /// call `completionHandler` with the result, from any thread, within 30 s by default, or the
    /// host terminates the app (0x2182bad4). The host takes a new snapshot afterwards.
    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void)
    /// A remote notification whose `aps` has `content-available: 1` (`UIBackgroundModes` has
    /// `remote-notification`); in the background or the foreground. Call `completionHandler`
    /// within 30 s by default, or the host terminates the app (0x2182bad4).
    func application(
        _ application: Application, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void)
    /// A background URL session's transfers finished while the app was suspended or not
    /// running, and the host launched or resumed it in the background for them. Keep
    /// `completionHandler`, make the session again with `identifier` (its delegate then gets each
    /// transfer's callbacks and `urlSessionDidFinishEvents(forBackgroundURLSession:)`), and call
    /// the handler there, within 30 s by default, or the host terminates the app (0x2182bad3).
    func application(
        _ application: Application, handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void)
    /// A scene session is connecting: return the configuration to create its scene with,
    /// normally one named in Info.plist's `UIApplicationSceneManifest` (the default: the
    /// manifest's first configuration).
    func application(
        _ application: Application, configurationForConnecting connectingSceneSession: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration
    /// Scene sessions were discarded (`discard-scene`, or a force quit): release what was kept
    /// for them. A session discarded while the app was not running is told at its next launch,
    /// once didFinishLaunching has returned (docs/lifecycle.md, "Scenes").
    func application(_ application: Application, didDiscardSceneSessions sceneSessions: Set<SceneSession>)
    /// `Application.registerForRemoteNotifications()` succeeded: the host's device token for the
    /// app, 32 bytes derived from its bundle identifier (docs/porting.md, "Porting iOS code").
    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data)
    /// `Application.registerForRemoteNotifications()` failed: never here (the host always
    /// answers with a token).
    func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error)
}

extension ApplicationDelegateCallbacks {
    public func application(
        _ application: Application, willFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool { true }
    public func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool { true }
    public func applicationDidBecomeActive(_ application: Application) {}
    public func applicationWillResignActive(_ application: Application) {}
    public func applicationDidEnterBackground(_ application: Application) {}
    public func applicationWillEnterForeground(_ application: Application) {}
    public func applicationWillTerminate(_ application: Application) {}
    public func applicationDidReceiveMemoryWarning(_ application: Application) {}
    public func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void
    ) {
        application.link.warn("the app declares the fetch background mode but its delegate does not implement application(_:performFetchWithCompletionHandler:); answering noData")
        completionHandler(.noData)
    }
    public func application(
        _ application: Application, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (Application.BackgroundFetchResult) -> Void
    ) {
        application.link.warn("the app declares the remote-notification background mode but its delegate does not implement application(_:didReceiveRemoteNotification:fetchCompletionHandler:); answering noData")
        completionHandler(.noData)
    }
    public func application(
        _ application: Application, handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        // The session's delegate still gets the events when the app makes the session.
        completionHandler()
    }
    public func application(
        _ application: Application, configurationForConnecting connectingSceneSession: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: nil, sessionRole: connectingSceneSession.role)
    }
    public func application(_ application: Application, didDiscardSceneSessions sceneSessions: Set<SceneSession>) {}
    public func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {}
    public func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error) {}
}

extension ApplicationDelegateCallbacks {
    /// What `@main` on the delegate class calls, as UIKit's `UIApplicationDelegate.main()` does,
    /// so that Xcode's `@main class AppDelegate: UIResponder, UIApplicationDelegate` compiles
    /// unchanged. An app is a plugin that the host loads, never an executable: the host creates
    /// the delegate from Info.plist and never calls this. Linked into an executable and run, it
    /// says so and exits with status 64 (EX_USAGE).
    public static func main() {
        writeStandardError(
            "\(Self.self) is an apphost app, not a program: bundle it (swift package bundle-app) and run it with apphost launch\n")
        exit(64)
    }
}
