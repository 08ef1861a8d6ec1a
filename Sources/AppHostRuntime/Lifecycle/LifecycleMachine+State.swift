import AppHostProtocol

// What the machine says of the app, derived from its phase and placement: the state users see,
// whether it runs, is ending or is in the foreground, and its next deadline.
extension LifecycleMachine {
    /// The app's state as users see it.
    package var state: AppState {
        switch phase {
        case .notRunning: .notRunning
        case .starting, .launching: .launching
        case .launched: launchKind == .foreground ? .inactive : .background
        case .inactive: .inactive
        case .active: .active
        case .background, .suspending, .resumedInBackground: .background
        case .suspended: .suspended
        case .terminating: finalState
        case .terminated: .terminated
        }
    }

    /// Whether the app's process exists (from spawn until its end is observed).
    package var isAlive: Bool { phase != .notRunning && phase != .terminated }

    /// Whether the host has decided to end the app and waits for its process to go.
    package var isEnding: Bool {
        if case .terminating = phase { return true }
        return false
    }

    /// Whether the app's process exists and the host has not decided to end it: the apps that
    /// rules apply to and commands reach.
    package var isLive: Bool { isAlive && !isEnding }

    /// Whether the app is in the foreground, or on its way there.
    package var isInForeground: Bool { placement == .foreground || placement == .interrupted }

    /// Whether the host asked the app to end (`terminate`, shutdown).
    var isTerminationRequested: Bool {
        if case .terminated = placement { return true }
        return false
    }

    /// Whether its threads are being stopped or are stopped (a suspension under way or done).
    package var isSuspendedOrSuspending: Bool { phase == .suspending || phase == .suspended }

    /// Whether its process is starting or its launch's callbacks are running.
    package var isStarting: Bool { phase == .starting || phase == .launching }

    /// Whether its launch's callbacks have just returned (didFinishLaunching), and its first
    /// move (active, or the background) is still to come.
    package var hasJustLaunched: Bool { phase == .launched }

    /// Whether something keeps it running rather than suspended: the foreground, an open
    /// background task, a continuous mode.
    package var isKeptRunning: Bool { isInForeground || !openTasks.isEmpty || !holds.isEmpty }

    /// The BGTaskScheduler identifiers it runs or is about to run.
    package var runningTaskIdentifiers: Set<String> {
        Set((work.values.map(\.event) + pendingEvents).compactMap(\.taskIdentifier))
    }

    /// The payload of the remote notification it is launched for, if any (its launch options).
    package var launchNotificationPayload: String? {
        pendingEvents.first { $0.kind == .remoteNotification }?.payload
    }

    /// When the caller must next deliver `.tick`.
    package var nextDeadline: HostInstant? { deadlines.values.min() }

    /// The background time left, while the app is in the background with its time running.
    package func backgroundTimeRemaining(at now: HostInstant) -> Duration? {
        guard let entered = backgroundEnteredAt else { return nil }
        return max(.zero, now.duration(to: backgroundTimeEndedEarly ?? entered + policy.backgroundTime))
    }
}
