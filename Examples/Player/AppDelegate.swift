import AppHostKit
import Foundation

/// A music player: it declares `audio` in UIBackgroundModes, activates a playback session and
/// plays a 4-second track. Sent home while playing it keeps running in the background (the host's
/// `ps` says "audio"); when the track ends it is suspended. An interruption (`audio-interrupt`, or
/// a call: `interrupt`) pauses it; when the interruption ends it plays on. apphost outputs no
/// sound: the player is how the app says that it plays.
final class AppDelegate: ApplicationDelegate, AVAudioPlayerDelegate {
    private let player = AVAudioPlayer(duration: 4)
    private var observer: (any NSObjectProtocol)?

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        player.delegate = self
        observer = NotificationCenter.default.addObserver(
            forName: AVAudioSession.interruptionNotification, object: nil, queue: nil
        ) { [weak self] notification in
            let type = (notification.userInfo?[AVAudioSession.interruptionTypeKey] as? UInt).flatMap(AVAudioSession.InterruptionType.init)
            MainActor.assumeIsolated { self?.interrupted(type) }
        }
        return true
    }

    func applicationDidBecomeActive(_ application: Application) {
        guard !player.isPlaying, player.currentTime == 0 else { return }
        do {
            try AVAudioSession.sharedInstance().setCategory(.playback)
            try AVAudioSession.sharedInstance().setActive(true)
        } catch {
            print("Player: cannot activate the audio session: \(error)")
            return
        }
        player.play()
        print("Player: playing a \(Int(player.duration)) s track")
    }

    private func interrupted(_ type: AVAudioSession.InterruptionType?) {
        switch type {
        case .began:
            print(String(format: "Player: interrupted at %.1f s", player.currentTime))
        case .ended:
            try? AVAudioSession.sharedInstance().setActive(true)
            player.play()
            print(String(format: "Player: playing on from %.1f s", player.currentTime))
        case nil:
            break
        }
    }

    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) {
        // Last words first: once it plays nothing in the background, it is suspended.
        print("Player: the track ended (state \(Application.shared.applicationState))")
        try? AVAudioSession.sharedInstance().setActive(false)
    }
}
