import Foundation

// User notifications on the wire (docs/porting.md, "Porting iOS code", UserNotifications): what the
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

extension WireNotificationRequest {
    /// An app's device token: 32 bytes derived from its bundle identifier alone (FNV-1a, then
    /// SplitMix64), so the same app gets the same token on every host and at every launch, and
    /// two apps different ones, as a provider's server expects. The host hands it out; a detached
    /// application's SDK, which has no host, derives the same.
    package static func deviceToken(for app: String) -> [UInt8] {
        var seed: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array("apphost device token \(app)".utf8) {
            seed = (seed ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        var bytes: [UInt8] = []
        for _ in 0..<4 {
            seed &+= 0x9e37_79b9_7f4a_7c15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            z ^= z >> 31
            bytes += withUnsafeBytes(of: z.bigEndian, Array.init)
        }
        return bytes
    }
}

/// A category the app registered (`setNotificationCategories`), as the host judges a tap's
/// action against it.
package struct WireNotificationCategory: Codable, Sendable, Equatable {
    /// One of the category's actions: a button, or a text field (`UNTextInputNotificationAction`).
    package struct Action: Codable, Sendable, Equatable {
        package var identifier: String
        /// `.foreground`: the action opens the app; without it, the app runs in the background.
        package var foreground: Bool
        package var textInput: Bool

        package init(identifier: String, foreground: Bool = false, textInput: Bool = false) {
            self.identifier = identifier
            self.foreground = foreground
            self.textInput = textInput
        }
    }

    package var identifier: String
    package var actions: [Action]
    /// `.customDismissAction`: a dismissal reaches the delegate.
    package var customDismissAction: Bool

    package init(identifier: String, actions: [Action], customDismissAction: Bool = false) {
        self.identifier = identifier
        self.actions = actions
        self.customDismissAction = customDismissAction
    }
}

/// A notification in the app's Notification Center, as `getDeliveredNotifications` lists it.
package struct WireDeliveredNotification: Codable, Sendable, Equatable {
    package var request: WireNotificationRequest
    /// When it was delivered, in seconds since 1970 on the scheduler's clock.
    package var date: Double

    package init(request: WireNotificationRequest, date: Double) {
        self.request = request
        self.date = date
    }
}

extension WireDeliveredNotification {
    /// In the configuration's compact layout (ConfigurationCoding.swift).
    func write(to writer: inout CompactWriter) {
        for text in [request.identifier, request.title, request.subtitle, request.body, request.categoryIdentifier] { writer.write(text) }
        writer.write(request.userInfo) { $0.write($1) }
        writer.write(request.interval) { $0.write($1) }
        writer.write(request.calendar.map { $0.sorted { $0.key < $1.key } }) { writer, fields in
            writer.write(fields) { writer, field in
                writer.write(field.key)
                writer.write(field.value)
            }
        }
        writer.write(request.repeats)
        writer.write(date)
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        var request = WireNotificationRequest(
            identifier: try reader.string("identifier"), title: try reader.string("title"), subtitle: try reader.string("subtitle"),
            body: try reader.string("body"), categoryIdentifier: try reader.string("categoryIdentifier"))
        request.userInfo = try reader.optional("userInfo") { reader throws(CompactCodingError) in try reader.string("userInfo") }
        request.interval = try reader.optional("interval") { reader throws(CompactCodingError) in try reader.double("interval") }
        request.calendar = try reader.optional("calendar") { reader throws(CompactCodingError) in
            Dictionary(try reader.array("calendar") { reader throws(CompactCodingError) in (try reader.string("calendar"), try reader.int("calendar")) }) { $1 }
        }
        request.repeats = try reader.bool("repeats")
        self.init(request: request, date: try reader.double("date"))
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
    /// `willPresent`'s completion: the notification `identifier` is shown with these
    /// `UNNotificationPresentationOptions` (raw value; 0: not shown).
    case presented(identifier: String, options: UInt)
    /// `setNotificationCategories(_:)`: the categories a tap's action is judged against.
    case categories([WireNotificationCategory])
}

/// Host to app: `HostMessage.notification`.
package enum WireNotificationTell: Codable, Sendable, Equatable {
    /// The app's authorization: `notDetermined`, `authorized` or `denied` (UNAuthorizationStatus's names).
    case authorization(String)
    /// A notification became due while the app is in the foreground: the center delegate's `willPresent`.
    case present(WireNotificationRequest)
    /// The user tapped a notification: the center delegate's `didReceive`, with this action
    /// (and the text typed, for a text-input action: a `UNTextInputNotificationResponse`).
    case respond(WireNotificationRequest, action: String, userText: String? = nil)
    /// The app's notifications in Notification Center changed: all of them, newest first.
    case delivered([WireDeliveredNotification])
    /// The app's device token for remote notifications.
    case deviceToken([UInt8])
}
