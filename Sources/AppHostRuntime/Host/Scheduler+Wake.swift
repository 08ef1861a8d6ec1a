import Foundation
import AppHostProtocol

// Which apps the scheduler may wake and for what (docs/background-modes.md, "Background modes"): the rules, as
// pure functions of a value the host takes of each app. The host gathers the facts, asks, and
// performs what the answer says.

extension Scheduler {
    /// What the scheduler is told of an app for one decision: a value the host takes on the
    /// loop, so that the rules never reach into an app's record or its machine.
    struct AppFacts: Equatable {
        var id: AppID
        var identifier: String
        var name: String
        var backgroundModes: Set<BackgroundMode>
        /// Its Info.plist's BGTaskSchedulerPermittedIdentifiers.
        var permittedTasks: [String] = []
        /// Its process, while it is alive (started and not yet ended); nil if it has none.
        var run: RunFacts?
        /// The task identifiers under way in its last run (handed to it, or queued for it): a
        /// request of one of them waits for that task to end.
        var runningTasks: Set<String> = []
    }

    /// What the scheduler is told of an app's live process.
    struct RunFacts: Equatable {
        /// Its state, for a refusal that names it.
        var state: AppState
        /// Its launch callbacks returned: its BGTaskScheduler registrations are closed.
        var launchFinished: Bool
        var inForeground: Bool
        /// The host decided to end it (it is being terminated).
        var isEnding: Bool
        /// The identifiers it registered a launch handler for while it launched.
        var registeredTasks: Set<String> = []
    }

    /// Whether a scheduled request or fetch may wake the app now: not force quit, not in the
    /// foreground, not being terminated, and, if it is not running, not while the host shuts down.
    func mayWake(_ app: AppFacts, shuttingDown: Bool) -> Bool {
        guard !isForceQuit(app.identifier) else { return false }
        guard let run = app.run else { return !shuttingDown }
        return !run.inForeground && !run.isEnding
    }

    /// Why a background event sent on demand (`fetch`, `run-task`, `push`…) would not reach the
    /// app now, as iOS would refuse it: a force-quit app, a host shutting down, an app being
    /// terminated, or (except a notification, `pushOnly`) the foreground app. Nil: it may be sent.
    func refusalToWake(_ app: AppFacts, pushOnly: Bool, shuttingDown: Bool) -> SupervisorError? {
        let name = app.name
        if isForceQuit(app.identifier) {
            return SupervisorError(
                "\(name) was force quit by the user: iOS wakes it in the background only after the user opens it again (open \(name))", code: .refused)
        }
        guard let run = app.run else {
            return shuttingDown ? SupervisorError("the host is shutting down", code: .shuttingDown) : nil
        }
        if run.isEnding { return SupervisorError("\(name) is being terminated", code: .wrongState) }
        if !pushOnly && run.inForeground {
            return SupervisorError(
                "\(name) is in the foreground (\(run.state.rawValue)); background events reach it in the background (home first)", code: .wrongState)
        }
        return nil
    }

    /// The event a remote notification's payload makes, if it is one that wakes an app: a JSON
    /// object whose `aps` has `"content-available": 1` (iOS wakes an app for nothing else); its
    /// keys sorted, on one line. Throws the refusal, naming `source`, otherwise.
    static func backgroundNotification(_ payload: Data, from source: String) throws -> BackgroundEvent {
        guard let object = try? JSONSerialization.jsonObject(with: payload), let notification = object as? [String: Any] else {
            throw SupervisorError("\(source) is not a JSON object (a notification payload such as {\"aps\": {\"content-available\": 1}})", code: .refused)
        }
        guard let aps = notification["aps"] as? [String: Any], (aps["content-available"] as? NSNumber)?.intValue == 1 else {
            throw SupervisorError(
                "\(source) is not a background notification: its aps has no \"content-available\": 1, so iOS would not wake the app for it", code: .refused)
        }
        let compact = try JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys])
        return BackgroundEvent(kind: .remoteNotification, payload: String(decoding: compact, as: UTF8.self))
    }

    /// The refusal of a wake for `what` that needs `mode`, if the app lacks it in its
    /// UIBackgroundModes.
    static func lacking(_ mode: BackgroundMode, _ app: AppFacts, for what: String) -> SupervisorError? {
        guard !app.backgroundModes.contains(mode) else { return nil }
        return SupervisorError("\(app.name) has no \(mode.rawValue) in Info.plist UIBackgroundModes: iOS would not wake it for \(what)", code: .refused)
    }

    /// Why `fetch` would not deliver a fetch to the app now: it lacks the fetch mode, background
    /// app refresh is off, or it cannot be reached (`refusalToWake`). Nil: it may be sent.
    func refusalToFetch(_ app: AppFacts, shuttingDown: Bool) -> SupervisorError? {
        if let lacking = Self.lacking(.fetch, app, for: "a background fetch") { return lacking }
        guard refreshAvailable else {
            return SupervisorError("background app refresh is off on this host (--no-background-app-refresh): iOS would not fetch", code: .refused)
        }
        return refusalToWake(app, pushOnly: false, shuttingDown: shuttingDown)
    }

    /// Why `run-task` would not run the task `identifier` of `kind` (`runEarly` says which) in
    /// the app now: not permitted, a mode the app lacks, a launch over without a handler for it,
    /// or an app that cannot be reached (`refusalToWake`). Nil: it may be run.
    func refusalToRun(_ identifier: String, kind: WireTaskRequest.Kind, _ app: AppFacts, shuttingDown: Bool) -> SupervisorError? {
        guard app.permittedTasks.contains(identifier) else {
            let permitted = app.permittedTasks.isEmpty ? "none" : app.permittedTasks.joined(separator: ", ")
            return SupervisorError(
                "\(identifier) is not in \(app.name)'s BGTaskSchedulerPermittedIdentifiers (\(permitted)): iOS would not run it", code: .refused)
        }
        if let lacking = Self.lacking(
            kind == .appRefresh ? .fetch : .processing, app, for: kind == .appRefresh ? "a refresh task" : "a processing task") {
            return lacking
        }
        if Self.lacksHandler(app, for: identifier) {
            return SupervisorError(
                "\(app.name) registered no launch handler for \(identifier) while it launched; register it before application(_:didFinishLaunchingWithOptions:) returns",
                code: .refused)
        }
        return refusalToWake(app, pushOnly: false, shuttingDown: shuttingDown)
    }

    /// Whether the app's launch is over without a launch handler for the task `identifier`:
    /// a request of it can no longer run in this process (iOS drops it).
    static func lacksHandler(_ app: AppFacts, for identifier: String) -> Bool {
        guard let run = app.run else { return false }
        return run.launchFinished && !run.registeredTasks.contains(identifier)
    }

    // MARK: Registration

    /// What registering a launch handler means.
    enum Registration: Equatable {
        case accepted
        /// Not permitted in Info.plist: `register` returns false, with this warning.
        case ignored(String)
        case terminated(Termination)
    }

    /// Identifiers must be permitted and registered once, before `didFinishLaunching` returns;
    /// registering one twice or late ends the app.
    static func registration(_ identifier: String, registered: Set<String>, launchFinished: Bool, permitted: [String]) -> Registration {
        if registered.contains(identifier) {
            return .terminated(Termination(
                kind: .taskRegistration, namespace: .host, code: nil,
                reason: "registered a launch handler for the task \(identifier) twice"))
        }
        if launchFinished {
            return .terminated(Termination(
                kind: .taskRegistration, namespace: .host, code: nil,
                reason: "registered a launch handler for the task \(identifier) after application(_:didFinishLaunchingWithOptions:) returned; register every task while launching"))
        }
        if permitted.contains(identifier) { return .accepted }
        return .ignored("registered \(identifier), which is not in BGTaskSchedulerPermittedIdentifiers; ignored")
    }
}
