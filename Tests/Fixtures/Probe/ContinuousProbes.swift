import AppHostKit
import Foundation

// What the Probe does with continuous background modes, from ProbeBehavior:
//   "playIn": CALLBACK            in that callback: category ("audioCategory": "playback" by
//                                 default, or "ambient"), setActive(true), play a track
//   "audioSeconds": S             the track's length (default: an hour)
//   "stopAudioAfter": S           stop the player S seconds after it starts
//   "resumeAfterInterruption": true   when an interruption ends, activate and play again
//   "voip": "report" | "none"     register for VoIP pushes while launching; on a push, report an
//                                 incoming call, or nothing (0xbaadca11)
//   "endCallAfter": S             report the call ended S seconds after it was reported
//   "location": {"request": "always" | "whenInUse", "in": CALLBACK (default didFinishLaunching),
//                "background": true, "significant": true, "stopAfter": N}
//                                 a CLLocationManager: ask for authorization, set
//                                 allowsBackgroundLocationUpdates, start updating (unless
//                                 "significant" only: "updating": false), stop after N updates
// Each records what it did and the interruptions and pushes it saw, with applicationState.
@MainActor
final class ContinuousProbe: PKPushRegistryDelegate, AVAudioPlayerDelegate, CLLocationManagerDelegate {
    private let behavior: [String: Any]
    private let record: (String) -> Void
    private var player: AVAudioPlayer?
    private var registry: PKPushRegistry?
    private let provider = CXProvider(configuration: CXProviderConfiguration())
    private var locationManager: CLLocationManager?
    private var updates = 0
    private var interruptionObserver: (any NSObjectProtocol)?

    init(behavior: [String: Any], record: @escaping (String) -> Void) {
        self.behavior = behavior
        self.record = record
        interruptionObserver = NotificationCenter.default.addObserver(
            forName: AVAudioSession.interruptionNotification, object: nil, queue: nil
        ) { [weak self] notification in
            let type = notification.userInfo?[AVAudioSession.interruptionTypeKey] as? UInt
            MainActor.assumeIsolated { self?.interrupted(type.flatMap(AVAudioSession.InterruptionType.init)) }
        }
    }

    func step(_ callback: String) {
        if behavior["playIn"] as? String == callback { play() }
        if let location = behavior["location"] as? [String: Any], callback == location["in"] as? String ?? "didFinishLaunching" {
            startLocation(location)
        }
        if callback == "didFinishLaunching", let voip = behavior["voip"] as? String {
            let registry = PKPushRegistry(queue: .main)
            registry.delegate = self
            registry.desiredPushTypes = [.voIP]
            self.registry = registry
            record("voip registered \(voip)")
        }
    }

    private func play() {
        let session = AVAudioSession.sharedInstance()
        do {
            try session.setCategory(behavior["audioCategory"] as? String == "ambient" ? .ambient : .playback)
            try session.setActive(true)
        } catch {
            record("audio session error \(error)")
        }
        let player = AVAudioPlayer(duration: behavior["audioSeconds"] as? Double ?? 3600)
        player.delegate = self
        self.player = player
        record("play \(player.play())")
        if let seconds = behavior["stopAudioAfter"] as? Double {
            DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { [weak self] in
                MainActor.assumeIsolated {
                    // Recorded first: once it stops playing in the background, it is suspended.
                    self?.record("stopping \(Application.shared.applicationState)")
                    self?.player?.stop()
                }
            }
        }
    }

    private func interrupted(_ type: AVAudioSession.InterruptionType?) {
        let name = type == .began ? "began" : type == .ended ? "ended" : "?"
        record("audioInterruption \(name) \(Application.shared.applicationState) main=\(Thread.isMainThread) playing=\(player?.isPlaying ?? false)")
        if type == .ended, behavior["resumeAfterInterruption"] as? Bool == true {
            try? AVAudioSession.sharedInstance().setActive(true)
            record("resumed play \(player?.play() ?? false)")
        }
    }

    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) {
        record("finished playing \(flag) \(Application.shared.applicationState)")
    }

    private func startLocation(_ settings: [String: Any]) {
        let manager = CLLocationManager()
        manager.delegate = self
        locationManager = manager
        if settings["request"] as? String == "always" { manager.requestAlwaysAuthorization() } else { manager.requestWhenInUseAuthorization() }
        if settings["background"] as? Bool == true { manager.allowsBackgroundLocationUpdates = true }
        if settings["significant"] as? Bool == true { manager.startMonitoringSignificantLocationChanges() }
        if settings["updating"] as? Bool ?? true { manager.startUpdatingLocation() }
        record("location started \(manager.authorizationStatus.rawValue)")
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations {
            record(String(format: "location %.6f,%.6f ", location.coordinate.latitude, location.coordinate.longitude)
                + "\(Application.shared.applicationState) main=\(Thread.isMainThread)")
        }
        updates += 1
        if let limit = (behavior["location"] as? [String: Any])?["stopAfter"] as? Int, updates >= limit {
            record("location stopping")
            manager.stopUpdatingLocation()
        }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        record("locationError \((error as? CLError)?.code == .denied ? "denied" : "\(error)")")
    }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        record("authorization \(manager.authorizationStatus.rawValue)")
    }

    func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {
        record("voip credentials \(pushCredentials.token.count) bytes")
    }

    func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping () -> Void
    ) {
        let caller = payload.dictionaryPayload["caller"] as? String ?? "?"
        record("voipPush \(caller) \(Application.shared.applicationState) main=\(Thread.isMainThread)")
        defer { completion() }
        guard behavior["voip"] as? String == "report" else { return }
        let call = UUID()
        let update = CXCallUpdate()
        update.remoteHandle = CXHandle(type: .generic, value: caller)
        provider.reportNewIncomingCall(with: call, update: update) { error in
            MainActor.assumeIsolated { self.record("call reported error=\(error.map { "\($0)" } ?? "none")") }
        }
        if let seconds = behavior["endCallAfter"] as? Double {
            DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { [weak self] in
                MainActor.assumeIsolated {
                    self?.record("call ending")
                    self?.provider.reportCall(with: call, endedAt: Date(), reason: .remoteEnded)
                }
            }
        }
    }
}
