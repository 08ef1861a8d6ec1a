public import Foundation
import AppHostProtocol

// PushKit and CallKit, as an iOS VoIP app uses them: a VoIP push (`voip-push APP FILE.json`)
// launches or resumes the app in the background and calls its PKPushRegistry delegate, which
// must report an incoming call to CXProvider before it returns, or the app is ended with
// 0xbaadca11 (as iOS ends it). A reported call keeps an app that declares `voip` in
// `UIBackgroundModes` running until it is reported ended.

/// A kind of push, as PushKit's `PKPushType`.
public struct PKPushType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// VoIP pushes: each must report an incoming call.
    public static let voIP = PKPushType(rawValue: "PKPushTypeVoIP")
    /// Pushes for a watch complication: accepted in `desiredPushTypes`; the host sends none.
    public static let complication = PKPushType(rawValue: "PKPushTypeComplication")
    /// Pushes for a File Provider extension: accepted in `desiredPushTypes`; the host sends none.
    public static let fileProvider = PKPushType(rawValue: "PKPushTypeFileProvider")
}

/// A push's content, as PushKit's `PKPushPayload`.
public final class PKPushPayload: @unchecked Sendable {
    public let type: PKPushType
    /// The JSON object of the push, as `[AnyHashable: Any]`.
    public let dictionaryPayload: [AnyHashable: Any]

    init(type: PKPushType, dictionaryPayload: [AnyHashable: Any]) {
        self.type = type
        self.dictionaryPayload = dictionaryPayload
    }
}

/// The token a push server would address the app by, as PushKit's `PKPushCredentials`.
public final class PKPushCredentials: Sendable {
    public let type: PKPushType
    public let token: Data

    init(type: PKPushType, token: Data) {
        self.type = type
        self.token = token
    }
}

/// What a `PKPushRegistry` tells the app, on the main queue.
@MainActor
public protocol PKPushRegistryDelegate: AnyObject {
    /// The app's push token for `type`, given once `desiredPushTypes` asks for it.
    func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType)
    /// A VoIP push: report an incoming call (`CXProvider.reportNewIncomingCall`) before returning,
    /// then call `completion`.
    func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping () -> Void)
}

extension PKPushRegistryDelegate {
    public func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {}
}

/// The app's registration for VoIP pushes, as PushKit's `PKPushRegistry`: set a delegate and
/// `desiredPushTypes = [.voIP]` while launching. Delegate methods run on the main queue, whatever
/// queue is given. Use it on the main actor.
@MainActor
public final class PKPushRegistry {
    public weak var delegate: (any PKPushRegistryDelegate)?
    /// The pushes the app wants; setting `[.voIP]` gives the delegate its credentials.
    public var desiredPushTypes: Set<PKPushType>? {
        didSet {
            guard desiredPushTypes?.contains(.voIP) == true else { return }
            let token = Data(Application.shared.bundleIdentifier.utf8)
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.delegate?.pushRegistry(self, didUpdate: PKPushCredentials(type: .voIP, token: token), for: .voIP)
                }
            }
        }
    }

    /// Registries alive, the first wanting VoIP pushes gets them.
    private static var registries: [WeakRegistry] = []

    /// `queue` is accepted for PushKit's signature; delegate methods run on the main queue.
    public init(queue: DispatchQueue?) {
        Self.registries.removeAll { $0.registry == nil }
        Self.registries.append(WeakRegistry(registry: self))
    }

    /// Hands a VoIP push to the delegate that wants it; false if none does.
    static func deliver(payload json: String) -> Bool {
        guard let registry = registries.lazy.compactMap(\.registry).first(where: { $0.desiredPushTypes?.contains(.voIP) == true && $0.delegate != nil }),
              let delegate = registry.delegate
        else { return false }
        let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] ?? [:]
        let payload = PKPushPayload(type: .voIP, dictionaryPayload: Dictionary(uniqueKeysWithValues: object.map { (AnyHashable($0.key), $0.value) }))
        delegate.pushRegistry(registry, didReceiveIncomingPushWith: payload, for: .voIP) {}
        return true
    }

    private struct WeakRegistry {
        weak var registry: PKPushRegistry?
    }
}

/// How a call is addressed, as CallKit's `CXHandle`.
public final class CXHandle: Sendable {
    public enum HandleType: Int, Sendable {
        case generic = 1
        case phoneNumber = 2
        case emailAddress = 3
    }

    public let type: HandleType
    public let value: String

    public init(type: HandleType, value: String) {
        self.type = type
        self.value = value
    }
}

/// What the system shows of a call, as CallKit's `CXCallUpdate`.
public final class CXCallUpdate: @unchecked Sendable {
    public var remoteHandle: CXHandle?
    public var localizedCallerName: String?
    public var hasVideo = false

    public init() {}
}

/// A provider's settings, as CallKit's `CXProviderConfiguration`.
public final class CXProviderConfiguration: @unchecked Sendable {
    public var maximumCallsPerCallGroup = 1
    public var supportsVideo = false

    public init() {}
}

/// Why a call ended, as CallKit's `CXCallEndedReason`.
public enum CXCallEndedReason: Int, Sendable {
    case failed = 1
    case remoteEnded = 2
    case unanswered = 3
    case answeredElsewhere = 4
    case declinedElsewhere = 5
}

/// What a `CXProvider` tells the app, on the main queue.
@MainActor
public protocol CXProviderDelegate: AnyObject {
    /// The provider was reset: every call it knew has ended.
    func providerDidReset(_ provider: CXProvider)
}

/// The app's calls, as the system knows them: CallKit's `CXProvider`. Report each incoming call
/// (`reportNewIncomingCall`, from a VoIP push's callback), and its end (`reportCall(with:endedAt:reason:)`).
/// A call under way keeps an app with `voip` in `UIBackgroundModes` running in the background.
/// Use it on the main actor.
@MainActor
public final class CXProvider {
    public let configuration: CXProviderConfiguration
    private weak var delegate: (any CXProviderDelegate)?
    private var calls: Set<UUID> = []

    public init(configuration: CXProviderConfiguration) {
        self.configuration = configuration
    }

    /// The delegate; `queue` is accepted for CallKit's signature, and methods run on the main queue.
    public func setDelegate(_ delegate: (any CXProviderDelegate)?, queue: DispatchQueue?) {
        self.delegate = delegate
    }

    /// Reports an incoming call; `completion` runs on the main queue with nil, or an error when
    /// the UUID is already a call of this provider's.
    public func reportNewIncomingCall(with uuid: UUID, update: CXCallUpdate, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let isNew = calls.insert(uuid).inserted
        if isNew { Application.shared.link.send(.callReported(uuid: uuid.uuidString)) }
        DispatchQueue.main.async {
            completion(isNew ? nil : CXError(message: "call \(uuid) was reported already"))
        }
    }

    /// Reports that a call ended (the other side hung up, the user ended it).
    public func reportCall(with uuid: UUID, endedAt date: Date?, reason: CXCallEndedReason) {
        guard calls.remove(uuid) != nil else { return }
        Application.shared.link.send(.callEnded(uuid: uuid.uuidString))
    }

    /// Ends every call of this provider and tells its delegate.
    public func invalidate() {
        for uuid in calls.sorted(by: { $0.uuidString < $1.uuidString }) { reportCall(with: uuid, endedAt: nil, reason: .failed) }
        delegate?.providerDidReset(self)
    }
}

/// A CallKit request the provider refused.
public struct CXError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}
