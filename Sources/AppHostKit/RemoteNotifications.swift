public import Foundation
import Synchronization
import AppHostProtocol

// Registration for remote notifications, as UIKit's. The host hands each app a device token: 32
// bytes derived from its bundle identifier, the same at every launch and on every host, as an
// app's token stays the same on one device. A background push still reaches the app from the
// host's `push APP FILE.json` command (docs/background-modes.md, "Background modes"), addressed by the app.

/// Kept for protocol compatibility of apps that name it; registration no longer fails.
public struct RemoteNotificationRegistrationError: Error, CustomStringConvertible, Sendable {
    public var description: String { "registration for remote notifications failed" }
}

extension Application {
    /// Whether the host handed this process a token (`isRegisteredForRemoteNotifications`).
    private static let registeredForRemote = Atomic<Bool>(false)

    /// Asks the host for the app's device token: the delegate's
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` runs on the main queue
    /// once it answers.
    public func registerForRemoteNotifications() {
        guard link.isDetached else { return link.send(.notification(.registerForRemoteNotifications)) }
        // No host: the token the host would hand out, on the main queue after this returns.
        let token = WireNotificationRequest.deviceToken(for: link.configuration.bundleIdentifier)
        DispatchQueue.main.async { MainActor.assumeIsolated { self.registered(deviceToken: token) } }
    }

    /// The host's answer: the token, to the delegate.
    @MainActor
    func registered(deviceToken: [UInt8]) {
        Self.registeredForRemote.store(true, ordering: .relaxed)
        delegate?.application(self, didRegisterForRemoteNotificationsWithDeviceToken: Data(deviceToken))
    }

    /// The app forgets its registration (the host keeps the token: the same one comes back).
    public func unregisterForRemoteNotifications() {
        Self.registeredForRemote.store(false, ordering: .relaxed)
    }

    /// Whether the host has handed this process its token.
    public var isRegisteredForRemoteNotifications: Bool { Self.registeredForRemote.load(ordering: .relaxed) }
}

extension UserDefaults {
    /// `object(forKey:)`, as Key-Value Coding's `value(forKey:)` answers for a defaults key on
    /// iOS (Foundation on Linux has no Key-Value Coding).
    public func value(forKey key: String) -> Any? { object(forKey: key) }

    /// `set(_:forKey:)`, as Key-Value Coding's `setValue(_:forKey:)` does for defaults on iOS.
    public func setValue(_ value: Any?, forKey key: String) { set(value, forKey: key) }
}
