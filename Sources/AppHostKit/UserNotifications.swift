public import Foundation

// UserNotifications, as an iOS app's delegate uses it: the center, its delegate, authorization,
// categories and requests. The host decides, as iOS's notification center does (README.md,
// "Porting iOS code"): authorization is its setting (`authorize APP notifications
// granted|denied`), which a request waits for when it has none; requests are kept by the host and
// delivered on its scheduler's clock, to the delegate's `willPresent` in the foreground, else kept
// as delivered until `tap-notification` opens the app for `didReceive` (UserNotificationCenter.swift).

/// What a notification may do, as `UNAuthorizationOptions` (raw values as Apple's).
public struct UNAuthorizationOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
    public static let carPlay = UNAuthorizationOptions(rawValue: 1 << 3)
    public static let criticalAlert = UNAuthorizationOptions(rawValue: 1 << 4)
    public static let providesAppNotificationSettings = UNAuthorizationOptions(rawValue: 1 << 5)
    public static let provisional = UNAuthorizationOptions(rawValue: 1 << 6)
}

/// Whether the app may notify the user, as `UNAuthorizationStatus` (raw values as Apple's).
public enum UNAuthorizationStatus: Int, Sendable {
    case notDetermined = 0, denied = 1, authorized = 2, provisional = 3, ephemeral = 4
}

/// How a notification is shown while the app is in the foreground, as `UNNotificationPresentationOptions`.
public struct UNNotificationPresentationOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNNotificationPresentationOptions(rawValue: 1 << 0)
    public static let sound = UNNotificationPresentationOptions(rawValue: 1 << 1)
    public static let alert = UNNotificationPresentationOptions(rawValue: 1 << 2)
    public static let list = UNNotificationPresentationOptions(rawValue: 1 << 3)
    public static let banner = UNNotificationPresentationOptions(rawValue: 1 << 4)
}

/// The app's notification settings, as `UNNotificationSettings`.
public final class UNNotificationSettings: Sendable {
    public let authorizationStatus: UNAuthorizationStatus
    init(authorizationStatus: UNAuthorizationStatus) { self.authorizationStatus = authorizationStatus }
}

/// A notification's sound, as `UNNotificationSound`.
public final class UNNotificationSound: Sendable {
    public static let `default` = UNNotificationSound()
}

/// What a notification says, as `UNNotificationContent`.
public class UNNotificationContent: @unchecked Sendable {
    public internal(set) var title = ""
    public internal(set) var subtitle = ""
    public internal(set) var body = ""
    public internal(set) var badge: NSNumber?
    public internal(set) var sound: UNNotificationSound?
    public internal(set) var userInfo: [AnyHashable: Any] = [:]
    public internal(set) var categoryIdentifier = ""
    public internal(set) var threadIdentifier = ""
    public init() {}
}

/// Content the app fills in, as `UNMutableNotificationContent`.
public final class UNMutableNotificationContent: UNNotificationContent, @unchecked Sendable {
    public override var title: String { get { super.title } set { super.title = newValue } }
    public override var subtitle: String { get { super.subtitle } set { super.subtitle = newValue } }
    public override var body: String { get { super.body } set { super.body = newValue } }
    public override var badge: NSNumber? { get { super.badge } set { super.badge = newValue } }
    public override var sound: UNNotificationSound? { get { super.sound } set { super.sound = newValue } }
    public override var userInfo: [AnyHashable: Any] { get { super.userInfo } set { super.userInfo = newValue } }
    public override var categoryIdentifier: String { get { super.categoryIdentifier } set { super.categoryIdentifier = newValue } }
    public override var threadIdentifier: String { get { super.threadIdentifier } set { super.threadIdentifier = newValue } }
}

/// When a notification is due, as `UNNotificationTrigger`.
public class UNNotificationTrigger: @unchecked Sendable {
    public let repeats: Bool
    init(repeats: Bool) { self.repeats = repeats }
}

/// Due after an interval, as `UNTimeIntervalNotificationTrigger`.
public final class UNTimeIntervalNotificationTrigger: UNNotificationTrigger, @unchecked Sendable {
    public let timeInterval: TimeInterval
    public init(timeInterval: TimeInterval, repeats: Bool) {
        self.timeInterval = timeInterval
        super.init(repeats: repeats)
    }
}

/// Due at matching dates, as `UNCalendarNotificationTrigger`.
public final class UNCalendarNotificationTrigger: UNNotificationTrigger, @unchecked Sendable {
    public let dateComponents: DateComponents
    public init(dateMatching dateComponents: DateComponents, repeats: Bool) {
        self.dateComponents = dateComponents
        super.init(repeats: repeats)
    }
}

/// A notification to show, as `UNNotificationRequest`.
public final class UNNotificationRequest: Sendable {
    public let identifier: String
    public let content: UNNotificationContent
    public let trigger: UNNotificationTrigger?
    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {
        self.identifier = identifier
        self.content = content
        self.trigger = trigger
    }
}

/// A delivered notification, as `UNNotification`: what `willPresent` and `didReceive` carry.
public final class UNNotification: Sendable {
    public let request: UNNotificationRequest
    public let date: Date
    init(request: UNNotificationRequest, date: Date) {
        self.request = request
        self.date = date
    }
}

/// The user's answer to a notification, as `UNNotificationResponse`.
public class UNNotificationResponse: @unchecked Sendable {
    public let notification: UNNotification
    public let actionIdentifier: String
    init(notification: UNNotification, actionIdentifier: String) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
    }
}

/// The answer to a text-input action, as `UNTextInputNotificationResponse`: the text typed.
public final class UNTextInputNotificationResponse: UNNotificationResponse, @unchecked Sendable {
    public let userText: String
    init(notification: UNNotification, actionIdentifier: String, userText: String) {
        self.userText = userText
        super.init(notification: notification, actionIdentifier: actionIdentifier)
    }
}

/// The action identifier of a notification opened, and of one dismissed.
public let UNNotificationDefaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
public let UNNotificationDismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

/// Options of an action, as `UNNotificationActionOptions`.
public struct UNNotificationActionOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let authenticationRequired = UNNotificationActionOptions(rawValue: 1 << 0)
    public static let destructive = UNNotificationActionOptions(rawValue: 1 << 1)
    public static let foreground = UNNotificationActionOptions(rawValue: 1 << 2)
}

/// A button of a notification, as `UNNotificationAction`.
public class UNNotificationAction: @unchecked Sendable {
    public let identifier: String
    public let title: String
    public let options: UNNotificationActionOptions
    public init(identifier: String, title: String, options: UNNotificationActionOptions = []) {
        self.identifier = identifier
        self.title = title
        self.options = options
    }
}

/// A button that opens a text field, as `UNTextInputNotificationAction`: the response is a
/// `UNTextInputNotificationResponse` with the text (`tap-notification APP ID ACTION --text TEXT`).
public final class UNTextInputNotificationAction: UNNotificationAction, @unchecked Sendable {
    public let textInputButtonTitle: String
    public let textInputPlaceholder: String
    public init(
        identifier: String, title: String, options: UNNotificationActionOptions = [], textInputButtonTitle: String, textInputPlaceholder: String
    ) {
        self.textInputButtonTitle = textInputButtonTitle
        self.textInputPlaceholder = textInputPlaceholder
        super.init(identifier: identifier, title: title, options: options)
    }
}

/// Options of a category, as `UNNotificationCategoryOptions`.
public struct UNNotificationCategoryOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let customDismissAction = UNNotificationCategoryOptions(rawValue: 1 << 0)
    public static let allowInCarPlay = UNNotificationCategoryOptions(rawValue: 1 << 1)
}

/// A kind of notification and its actions, as `UNNotificationCategory`.
public final class UNNotificationCategory: Hashable, @unchecked Sendable {
    public let identifier: String
    public let actions: [UNNotificationAction]
    public let intentIdentifiers: [String]
    public let options: UNNotificationCategoryOptions
    public init(identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String], options: UNNotificationCategoryOptions = []) {
        self.identifier = identifier
        self.actions = actions
        self.intentIdentifiers = intentIdentifiers
        self.options = options
    }
    public static func == (lhs: UNNotificationCategory, rhs: UNNotificationCategory) -> Bool { lhs.identifier == rhs.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }
}

/// What the center tells the app, as `UNUserNotificationCenterDelegate`: every method optional.
/// The SDK calls the completion-handler forms on the main queue: `willPresent` when a
/// notification is due while the app is in the foreground (the options it completes with go to
/// the host: `.list`, `.banner` or `.alert` keep it in Notification Center, `[]` shows nothing),
/// `didReceive` when the user tapped one (`tap-notification`) and the app is active, or, for an
/// action without `.foreground` or a custom dismissal, running in the background. A delegate that implements the async forms
/// instead (as Swift concurrency code does) has them called by the completion-handler forms'
/// defaults, as Apple's bridging does.
@MainActor
public protocol UNUserNotificationCenterDelegate: AnyObject {
    func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void)
    func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void)
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification) async -> UNNotificationPresentationOptions
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async
    func userNotificationCenter(_ center: UNUserNotificationCenter, openSettingsFor notification: UNNotification?)
}

extension UNUserNotificationCenterDelegate {
    /// The async form's answer (none: not shown).
    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void
    ) {
        Task { @MainActor in completionHandler(await self.userNotificationCenter(center, willPresent: notification)) }
    }
    /// The async form, then the completion.
    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        Task { @MainActor in
            await self.userNotificationCenter(center, didReceive: response)
            completionHandler()
        }
    }
    public func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification) async -> UNNotificationPresentationOptions { [] }
    public func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {}
    public func userNotificationCenter(_ center: UNUserNotificationCenter, openSettingsFor notification: UNNotification?) {}
}
