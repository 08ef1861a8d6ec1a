public import Foundation

// Registration for remote notifications, as UIKit's. apphost has no push service: a background
// push reaches an app from the host's `push APP FILE.json` command (README.md, "Background
// modes"), addressed by the app, with no device token and no registration. So registering fails,
// honestly and as iOS reports a failure: the delegate's
// `application(_:didFailToRegisterForRemoteNotificationsWithError:)` runs on the main queue
// after the call returns, with an error that says why, and a warning event says it too.

/// Why `registerForRemoteNotifications()` failed: apphost has no push service to give a token.
public struct RemoteNotificationRegistrationError: Error, CustomStringConvertible, Sendable {
    public var description: String {
        "apphost has no push service and gives no device token: background pushes reach the app from the host's push command, without registration"
    }
}

extension Application {
    /// Asks for a device token, as UIKit's method: here the delegate's
    /// `application(_:didFailToRegisterForRemoteNotificationsWithError:)` is called, on the main
    /// queue after this returns, with a `RemoteNotificationRegistrationError`.
    public func registerForRemoteNotifications() {
        link.warn("registerForRemoteNotifications(): \(RemoteNotificationRegistrationError()); the delegate hears didFailToRegisterForRemoteNotificationsWithError")
        DispatchQueue.main.async {
            MainActor.assumeIsolated {
                self.delegate?.application(self, didFailToRegisterForRemoteNotificationsWithError: RemoteNotificationRegistrationError())
            }
        }
    }

    /// Does nothing: the app was never registered.
    public func unregisterForRemoteNotifications() {}

    /// False: registration never succeeds here.
    public var isRegisteredForRemoteNotifications: Bool { false }
}

extension UserDefaults {
    /// `object(forKey:)`, as Key-Value Coding's `value(forKey:)` answers for a defaults key on
    /// iOS (Foundation on Linux has no Key-Value Coding).
    public func value(forKey key: String) -> Any? { object(forKey: key) }

    /// `set(_:forKey:)`, as Key-Value Coding's `setValue(_:forKey:)` does for defaults on iOS.
    public func setValue(_ value: Any?, forKey key: String) { set(value, forKey: key) }
}
