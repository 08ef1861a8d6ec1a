// What a user's command may ask of the app now, in the machine's own terms: the guards `handle`
// applies to these inputs, said in words, so that a command refuses what the machine would
// silently not do, and never restates the machine's rules.
extension LifecycleMachine {
    /// Why the machine would not take `input` now, to follow the app's name ("Notes is not in
    /// the foreground"); nil if it takes it. Inputs a command does not send are always taken.
    package func refusal(of input: Input) -> String? {
        switch input {
        case .interrupt:
            return isAlive && isInForeground ? nil : "is not in the foreground"
        case .openSwitcher:
            guard isAlive, isInForeground else { return "is not in the foreground" }
            return placement == .interrupted ? "is interrupted already (the app switcher is open, or a call): open or home first" : nil
        case .terminate:
            return isAlive ? nil : "is not running"
        case .wakeInBackground:
            return phase == .suspended ? nil : "is \(state.rawValue), not suspended"
        case .expireWork, .expireBackgroundTime:
            return isLive ? nil : "is not running"
        default:
            return nil
        }
    }

    /// What `expire` ends now (`expireWork`, `expireBackgroundTime`): the running
    /// BGTaskScheduler tasks, with `identifier` or all, that have not expired; and, without an
    /// identifier, the background time of the open background tasks while the app is in the
    /// background (how many there are; 0: none to end).
    package func expirable(identifier: String?) -> (tasks: [UInt64: BackgroundEvent], backgroundTasks: Int) {
        let tasks = work.filter { _, item in
            item.event.isTask && item.expiredBecause == nil && (identifier == nil || item.event.taskIdentifier == identifier)
        }.mapValues(\.event)
        let grants = identifier == nil && backgroundEnteredAt != nil && !isEnding ? openTasks.count : 0
        return (tasks, grants)
    }
}
