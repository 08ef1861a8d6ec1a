public import Foundation
import AppHostProtocol

extension Application {
    /// Posted after `application(_:didFinishLaunchingWithOptions:)` returns; `userInfo` holds the
    /// launch options keyed by their raw values (`"launchReason"`, …).
    public nonisolated static let didFinishLaunchingNotification = Notification.Name("UIApplicationDidFinishLaunchingNotification")
    /// Posted after `applicationDidBecomeActive(_:)` returns.
    public nonisolated static let didBecomeActiveNotification = Notification.Name("UIApplicationDidBecomeActiveNotification")
    /// Posted after `applicationWillResignActive(_:)` returns.
    public nonisolated static let willResignActiveNotification = Notification.Name("UIApplicationWillResignActiveNotification")
    /// Posted after `applicationDidEnterBackground(_:)` returns, before the snapshot.
    public nonisolated static let didEnterBackgroundNotification = Notification.Name("UIApplicationDidEnterBackgroundNotification")
    /// Posted after `applicationWillEnterForeground(_:)` returns.
    public nonisolated static let willEnterForegroundNotification = Notification.Name("UIApplicationWillEnterForegroundNotification")
    /// Posted after `applicationWillTerminate(_:)` returns, within its time limit.
    public nonisolated static let willTerminateNotification = Notification.Name("UIApplicationWillTerminateNotification")
    /// Posted after `applicationDidReceiveMemoryWarning(_:)` returns.
    public nonisolated static let didReceiveMemoryWarningNotification = Notification.Name("UIApplicationDidReceiveMemoryWarningNotification")

    /// The notification UIKit posts for a life-cycle callback, if any.
    nonisolated static func notification(after callback: WireCallback) -> Notification.Name? {
        switch callback {
        case .didFinishLaunching: didFinishLaunchingNotification
        case .didBecomeActive: didBecomeActiveNotification
        case .willResignActive: willResignActiveNotification
        case .didEnterBackground: didEnterBackgroundNotification
        case .willEnterForeground: willEnterForegroundNotification
        case .willTerminate: willTerminateNotification
        case .didReceiveMemoryWarning: didReceiveMemoryWarningNotification
        case .willFinishLaunching, .performFetch, .didReceiveRemoteNotification, .launchTask, .snapshot,
             .didReceiveIncomingPush, .didUpdateLocations, .connectScene, .disconnectScene, .discardScene,
             .handleEventsForBackgroundURLSession: nil
        }
    }

    /// Posts `callback`'s notification on the default center, with this application as its
    /// object, as UIKit does right after the delegate method returns (on the main thread, before
    /// the host is told the callback is done, so observers run within its time limit).
    func postNotification(after callback: WireCallback, launchOptions: [LaunchOptionsKey: Any]) {
        guard let name = Application.notification(after: callback) else { return }
        let userInfo = callback == .didFinishLaunching
            ? Dictionary(uniqueKeysWithValues: launchOptions.map { (AnyHashable($0.key.rawValue), $0.value) }) : nil
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
    }
}
