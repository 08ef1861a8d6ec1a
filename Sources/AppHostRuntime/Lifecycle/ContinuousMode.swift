/// A background mode that keeps an app running in the background for as long as it does its
/// work, rather than for one event (Apple's "Extending your app's background execution time"):
/// playing audio, updating location, a VoIP call. While one holds the app, the machine does not
/// suspend it; when the last lets go, the app is suspended at once unless background tasks or
/// background work still hold it. Each needs its `UIBackgroundModes` entry.
public enum ContinuousMode: String, Sendable, Hashable, Comparable, CaseIterable, Codable {
    /// The app plays audio: its AVAudioSession, category playback, is active and a player plays.
    case audio
    /// The app receives location updates in the background (`allowsBackgroundLocationUpdates`).
    case location
    /// The app has a CallKit call under way.
    case voip

    public static func < (lhs: ContinuousMode, rhs: ContinuousMode) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The `UIBackgroundModes` entry that lets this mode hold the app.
    public var backgroundMode: BackgroundMode {
        switch self {
        case .audio: .audio
        case .location: .location
        case .voip: .voip
        }
    }
}
