import AppHostKit
import Foundation

/// A softphone: it declares `voip` in UIBackgroundModes and registers for VoIP pushes while
/// launching. A push (`voip-push Softphone call.json`, `{"caller": "Alice", "seconds": 3}`)
/// launches or resumes it in the background; it reports the incoming call to CallKit before the
/// push callback returns, as iOS requires (else 0xbaadca11). The call keeps it running (`ps`
/// says "voip") until the caller hangs up after `seconds`; then it is suspended.
final class AppDelegate: ApplicationDelegate, PKPushRegistryDelegate {
    private let registry = PKPushRegistry(queue: .main)
    private let provider = CXProvider(configuration: CXProviderConfiguration())

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        registry.delegate = self
        registry.desiredPushTypes = [.voIP]
        return true
    }

    func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {
        print("Softphone: registered for VoIP pushes (\(pushCredentials.token.count)-byte token)")
    }

    func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping () -> Void
    ) {
        let caller = payload.dictionaryPayload["caller"] as? String ?? "Unknown"
        let seconds = payload.dictionaryPayload["seconds"] as? Double ?? 3
        let call = UUID()
        let update = CXCallUpdate()
        update.remoteHandle = CXHandle(type: .generic, value: caller)
        update.localizedCallerName = caller
        // Before returning: iOS ends a VoIP app whose push reports no call.
        provider.reportNewIncomingCall(with: call, update: update) { error in
            print(error.map { "Softphone: the call was refused: \($0)" } ?? "Softphone: \(caller) is calling")
        }
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { [provider] in
            MainActor.assumeIsolated {
                // Said first: once the call ends in the background, the app is suspended.
                print("Softphone: \(caller) hung up")
                provider.reportCall(with: call, endedAt: Date(), reason: .remoteEnded)
            }
        }
        completion()
    }
}
