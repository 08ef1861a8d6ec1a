import Foundation

// User notifications on the wire (README.md, "Porting iOS code", UserNotifications): what the
// app's UNUserNotificationCenter and registerForRemoteNotifications() ask the host, and what the
// host tells the app. One case of AppMessage and one of HostMessage carry them, so that the
// control stages and message names stay one line each.

/// A notification request as the host keeps it: its content and when it is due.
package struct WireNotificationRequest: Codable, Sendable, Equatable {
    package var identifier: String
    package var title: String
    package var subtitle: String
    package var body: String
    package var categoryIdentifier: String
    /// The content's userInfo as a JSON object, when it has one that JSON can carry.
    package var userInfo: String?
    /// A UNTimeIntervalNotificationTrigger's interval, in seconds.
    package var interval: Double?
    /// A UNCalendarNotificationTrigger's components (year, month, day, hour, minute, second,
    /// weekday), matched in UTC.
    package var calendar: [String: Int]?
    package var repeats: Bool

    package init(
        identifier: String, title: String, subtitle: String = "", body: String = "", categoryIdentifier: String = "",
        userInfo: String? = nil, interval: Double? = nil, calendar: [String: Int]? = nil, repeats: Bool = false
    ) {
        self.identifier = identifier
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.categoryIdentifier = categoryIdentifier
        self.userInfo = userInfo
        self.interval = interval
        self.calendar = calendar
        self.repeats = repeats
    }
}

/// App to host: `AppMessage.notification`.
package enum WireNotificationAsk: Codable, Sendable, Equatable {
    /// `requestAuthorization(options:completionHandler:)`: answered by `authorization` once the
    /// host has a setting for the app (at once, or when `authorize APP notifications` sets it).
    case requestAuthorization
    /// `getNotificationSettings`: answered by `authorization` at once.
    case settings
    /// `add(_:)`: the host keeps the request and delivers it when it is due.
    case add(WireNotificationRequest)
    /// `removePendingNotificationRequests(withIdentifiers:)`; nil: `removeAllPendingNotificationRequests()`.
    case removePending([String]?)
    /// `removeDeliveredNotifications(withIdentifiers:)`; nil: all.
    case removeDelivered([String]?)
    /// `registerForRemoteNotifications()`: answered by `deviceToken`.
    case registerForRemoteNotifications
}

/// Host to app: `HostMessage.notification`.
package enum WireNotificationTell: Codable, Sendable, Equatable {
    /// The app's authorization: `notDetermined`, `authorized` or `denied` (UNAuthorizationStatus's names).
    case authorization(String)
    /// A notification became due while the app is in the foreground: the center delegate's `willPresent`.
    case present(WireNotificationRequest)
    /// The user tapped a notification: the center delegate's `didReceive`, with this action.
    case respond(WireNotificationRequest, action: String)
    /// The app's device token for remote notifications.
    case deviceToken([UInt8])
}
