public import Foundation
import AppHostProtocol

/// The app's audio session, as AVFoundation's `AVAudioSession`: the category says what the app
/// does with audio, and activating it says the app is about to play.
///
/// Nothing here outputs sound: apphost has no audio device. What the session and its players
/// track is what the host needs to apply iOS's rule: an app that declares `audio` in Info.plist
/// `UIBackgroundModes` keeps running in the background while its session, category playback, is
/// active and a player (`AVAudioPlayer`) plays. Without the mode, or when nothing plays, it is
/// suspended as usual. Use it on the main actor.
@MainActor
public final class AVAudioSession {
    /// A category, as `AVAudioSession.Category`.
    public struct Category: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Mixes with other audio; silenced by the ring switch; never plays in the background.
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        /// The default: like ambient, but not mixed.
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        /// Playback that matters to the app (music, podcasts): plays in the background with the
        /// audio mode.
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        /// Recording and playback (VoIP, chat): plays in the background with the audio mode.
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
        /// Recording only: plays nothing.
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        /// Several routes at once: plays in the background with the audio mode.
        public static let multiRoute = Category(rawValue: "AVAudioSessionCategoryMultiRoute")

        /// Whether playing in this category can keep the app running in the background.
        var playsInBackground: Bool { self == .playback || self == .playAndRecord || self == .multiRoute }
    }

    /// A mode, as `AVAudioSession.Mode`: what the audio is for. Kept, and not applied (apphost
    /// has no audio processing to tune).
    public struct Mode: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        public static let videoChat = Mode(rawValue: "AVAudioSessionModeVideoChat")
        public static let gameChat = Mode(rawValue: "AVAudioSessionModeGameChat")
        public static let videoRecording = Mode(rawValue: "AVAudioSessionModeVideoRecording")
        public static let measurement = Mode(rawValue: "AVAudioSessionModeMeasurement")
        public static let moviePlayback = Mode(rawValue: "AVAudioSessionModeMoviePlayback")
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
        public static let voicePrompt = Mode(rawValue: "AVAudioSessionModeVoicePrompt")
    }

    /// A category's options, as `AVAudioSession.CategoryOptions` (raw values as Apple's). Kept,
    /// and not applied: there are no other apps' audio to mix with and no routes.
    public struct CategoryOptions: OptionSet, Sendable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        public static let interruptSpokenAudioAndMixWithOthers = CategoryOptions(rawValue: 0x11)
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
        public static let allowAirPlay = CategoryOptions(rawValue: 0x40)
        public static let overrideMutedMicrophoneInterruption = CategoryOptions(rawValue: 0x80)
    }

    /// Options of `setActive(_:options:)`, as `AVAudioSession.SetActiveOptions`.
    public struct SetActiveOptions: OptionSet, Sendable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Tell other apps when the session deactivates: there are none here.
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// The type of an interruption, under `interruptionTypeKey` (a `UInt`), as AVFoundation's.
    public enum InterruptionType: UInt, Sendable {
        case began = 1
        case ended = 0
    }

    /// Options of an ended interruption, under `interruptionOptionKey` (a `UInt`).
    public struct InterruptionOptions: OptionSet, Sendable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The interruption is over and the app may play again.
        public static let shouldResume = InterruptionOptions(rawValue: 1)
    }

    /// Posted on the main queue through `NotificationCenter.default` when a call or the host
    /// (`audio-interrupt APP`, `audio-resume APP`) interrupts the session and when the
    /// interruption ends. `userInfo[interruptionTypeKey]` is the `InterruptionType`'s raw value.
    public nonisolated static let interruptionNotification = Notification.Name("AVAudioSessionInterruptionNotification")
    public nonisolated static let interruptionTypeKey = "AVAudioSessionInterruptionTypeKey"
    public nonisolated static let interruptionOptionKey = "AVAudioSessionInterruptionOptionKey"

    private static let shared = AVAudioSession()

    /// The app's one session.
    public static func sharedInstance() -> AVAudioSession { shared }

    public private(set) var category: Category = .soloAmbient
    /// The mode the app set last.
    public private(set) var mode: Mode = .default
    /// The category options the app set last.
    public private(set) var categoryOptions: CategoryOptions = []
    /// Whether the session is active (`setActive(true)`, and no interruption since).
    public private(set) var isActive = false
    /// Players playing now, held until they stop as AVFoundation holds them.
    private var playing: [ObjectIdentifier: AVAudioPlayer] = [:]
    /// What the host was last told.
    private var reported = (active: false, playing: false)

    private init() {}

    /// Sets the category (`setCategory(_:)`); it applies at once.
    public func setCategory(_ category: Category) throws {
        self.category = category
        report()
    }

    /// Sets the category, its mode and options, as `setCategory(_:mode:options:)`.
    public func setCategory(_ category: Category, mode: Mode, options: CategoryOptions = []) throws {
        self.mode = mode
        categoryOptions = options
        try setCategory(category)
    }

    /// Sets the category and its options, as `setCategory(_:options:)`.
    public func setCategory(_ category: Category, options: CategoryOptions) throws {
        try setCategory(category, mode: mode, options: options)
    }

    /// Sets the mode, as `setMode(_:)`.
    public func setMode(_ mode: Mode) throws {
        self.mode = mode
    }

    /// `setActive(_:)`; the options change nothing here.
    public func setActive(_ active: Bool, options: SetActiveOptions) throws {
        try setActive(active)
    }

    /// Activates or deactivates the session. Deactivating it while a player plays stops counting
    /// that player as playing audio for the host (iOS would silence it).
    public func setActive(_ active: Bool) throws {
        isActive = active
        report()
    }

    /// Whether the app plays audio that can hold it in the background.
    var playsAudio: Bool { isActive && category.playsInBackground && !playing.isEmpty }

    func player(_ player: AVAudioPlayer, isPlaying: Bool) {
        playing[ObjectIdentifier(player)] = isPlaying ? player : nil
        report()
    }

    /// Tells the host when its active or playing state changed.
    private func report() {
        let now = (active: isActive, playing: playsAudio)
        guard now != reported else { return }
        reported = now
        Application.shared.link.send(.audio(active: now.active, playing: now.playing))
    }

    /// The host interrupted the session, or the interruption ended. As on iOS, players pause and
    /// the session is deactivated when it begins; when it ends the app may activate and play again.
    func interruption(began: Bool) {
        if began {
            for player in playing.values { player.pauseForInterruption() }
            playing.removeAll()
            isActive = false
            report()
        }
        var info: [AnyHashable: Any] = [Self.interruptionTypeKey: (began ? InterruptionType.began : .ended).rawValue]
        if !began { info[Self.interruptionOptionKey] = InterruptionOptions.shouldResume.rawValue }
        NotificationCenter.default.post(name: Self.interruptionNotification, object: self, userInfo: info)
    }
}

/// What an `AVAudioPlayer` tells its delegate.
@MainActor
public protocol AVAudioPlayerDelegate: AnyObject {
    /// The track played to its end (`successfully`), or was stopped by an interruption.
    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool)
}

/// A player of one silent track of `duration` seconds, as AVFoundation's `AVAudioPlayer` plays a
/// file: `play()`, `pause()`, `stop()`, `isPlaying`, `currentTime`, `numberOfLoops`. It is how an
/// app says that it plays (apphost outputs no sound). A track that reaches its end stops, unless
/// `numberOfLoops` asks for more (a negative number: for ever). Use it on the main actor.
@MainActor
public final class AVAudioPlayer {
    public let duration: TimeInterval
    /// Times the track plays again after the first; negative: until stopped.
    public var numberOfLoops = 0
    public weak var delegate: (any AVAudioPlayerDelegate)?
    public private(set) var isPlaying = false
    /// Where playing stood when it last paused or stopped.
    private var position: TimeInterval = 0
    private var startedAt: Date?
    private var loopsPlayed = 0
    /// Bumped at each play, pause and stop: a scheduled end of an earlier play does nothing.
    private var generation = 0

    /// A track of `duration` seconds (at least a millisecond).
    public init(duration: TimeInterval) {
        self.duration = max(0.001, duration)
    }

    /// The position in the track, in seconds.
    public var currentTime: TimeInterval {
        get { startedAt.map { min(duration, position + Date().timeIntervalSince($0)) } ?? position }
        set { position = min(max(0, newValue), duration); if isPlaying { startedAt = Date(); scheduleEnd() } }
    }

    /// Starts or resumes playing; returns whether it plays.
    @discardableResult
    public func play() -> Bool {
        guard !isPlaying else { return true }
        if position >= duration { position = 0 }
        isPlaying = true
        startedAt = Date()
        scheduleEnd()
        AVAudioSession.sharedInstance().player(self, isPlaying: true)
        return true
    }

    /// Pauses, keeping the position.
    public func pause() {
        guard isPlaying else { return }
        position = currentTime
        halt()
    }

    /// Stops; the next `play()` starts from where it stopped, as AVAudioPlayer's does.
    public func stop() {
        guard isPlaying else { return }
        position = currentTime
        halt()
    }

    func pauseForInterruption() {
        position = currentTime
        isPlaying = false
        startedAt = nil
        generation += 1
    }

    private func halt() {
        isPlaying = false
        startedAt = nil
        generation += 1
        AVAudioSession.sharedInstance().player(self, isPlaying: false)
    }

    private func scheduleEnd() {
        generation += 1
        let expected = generation
        let left = max(0, duration - position - (startedAt.map { Date().timeIntervalSince($0) } ?? 0))
        DispatchQueue.main.asyncAfter(deadline: .now() + left) { [weak self] in
            MainActor.assumeIsolated { self?.reachedEnd(expected) }
        }
    }

    private func reachedEnd(_ expected: Int) {
        guard isPlaying, generation == expected else { return }
        if numberOfLoops < 0 || loopsPlayed < numberOfLoops {
            loopsPlayed += 1
            position = 0
            startedAt = Date()
            scheduleEnd()
            return
        }
        position = duration
        loopsPlayed = 0
        isPlaying = false
        startedAt = nil
        generation += 1
        // The delegate first: it may play the next track, and an app that stops playing in the
        // background is suspended as soon as the host hears of it.
        delegate?.audioPlayerDidFinishPlaying(self, successfully: true)
        if !isPlaying { AVAudioSession.sharedInstance().player(self, isPlaying: false) }
    }
}
