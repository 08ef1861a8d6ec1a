public import Foundation
import AppHostProtocol

extension Application {
    /// The shared container of an app group the app is entitled to (Info.plist
    /// `AppHostEntitlements` → `com.apple.security.application-groups`), or nil if it is not
    /// entitled to that group. Every app of the group reads and writes the same directory.
    public nonisolated func containerURL(forApplicationGroup identifier: String) -> URL? {
        link.configuration.sandbox?.groupContainers?[identifier].map { URL(fileURLWithPath: $0, isDirectory: true) }
    }
}

extension FileManager {
    /// As on iOS: the shared container of an app group the app is entitled to, or nil.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        Application.shared.containerURL(forApplicationGroup: groupIdentifier)
    }
}
