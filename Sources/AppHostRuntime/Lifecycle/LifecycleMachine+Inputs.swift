package import AppHostProtocol

/// What the machine takes (inputs, each with `now`) and what it asks of its caller (actions).
extension LifecycleMachine {
    package enum Input: Sendable, Equatable {
        case launch(LaunchKind, reason: String)
        /// The plugin is loaded and its delegate exists.
        case ready
        case launchFailed(String)
        case acknowledged(id: UInt64, returned: Bool?, snapshot: String?)
        /// Callback `id` returned true, and the app now runs the next callback its configuration
        /// carries: the launch's didBecomeActive (`launchCallbacks(activating:)`).
        case acknowledgedThenNext(id: UInt64)
        case taskBegan(id: UInt64, name: String?)
        case taskEnded(id: UInt64)
        case warning(String)
        /// Something the app did that the host records as an event of its own (`taskSubmitted`…).
        case info(EventName, String?)
        /// Every thread of the app is verified stopped.
        case suspensionVerified
        case exited(ProcessExit)
        case protocolViolation(String)
        /// The app closed its end of the control socket (or it failed): unless the process ends
        /// within a short grace, it is a protocol violation.
        case controlClosed
        /// Time passed: deadlines at or before `now` fire.
        case tick
        case moveToForeground
        case moveToBackground
        case interrupt(Duration?)
        case endInterruption
        /// The expiration handlers of these tasks began, or all returned, on the main thread.
        case expirationHandlers(taskIDs: [UInt64], returned: Bool)
        /// The app switcher opened over the foreground app: it resigns active until `open` or
        /// `home` (or a user termination) ends it.
        case openSwitcher
        case terminate(byUser: Bool)
        /// Resume a suspended app into the background (sequence 6); the seam where background
        /// events (fetch, push, tasks) will be delivered.
        case wakeInBackground
        /// Deliver a background event: launch the app into the background for it (sequence 5,
        /// with `reason` in the launch options), resume it there if suspended (sequence 6), or
        /// hand it over where it runs (a remote notification reaches a foreground app too).
        case deliver(BackgroundEvent, reason: String)
        /// The app called a completion handler or `setTaskCompleted(success:)`.
        case workCompleted(id: UInt64, result: String)
        /// End running BGTaskScheduler tasks early (`expire APP [ID]`): their expiration
        /// handlers run now and the grace period starts. Nil: every running task.
        case expireWork(ids: [UInt64]?, reason: String)
        /// The background time of `beginBackgroundTask` grants ends now (`expire APP`).
        case expireBackgroundTime
        /// The host's simulated power or network changed: processing tasks needing what is gone end.
        case conditionsChanged(externalPower: Bool, network: Bool)
        /// Kill now, without a callback: the host was told to stop at once (a second Ctrl-C).
        case abort
        case memoryWarning
        /// A host rule ends the app now, without a callback: a forbidden system call, too many
        /// sandbox violations.
        case enforce(Termination)
        /// The main thread's backtrace that a watchdog asked for has come.
        case mainThreadSampled
        /// The app's audio session (the SDK's report): active, and playing.
        case audio(active: Bool, playing: Bool)
        /// Interrupt the app's audio session, or end the interruption (`audio-interrupt`,
        /// `audio-resume`).
        case audioInterruption(began: Bool)
        /// The app now receives location updates in the background, or no longer; `why` for its event.
        case backgroundLocation(Bool, why: String)
        /// The app reported an incoming CallKit call (by UUID), or ended one.
        case callReported(String)
        case callEnded(String)
        /// A scene operation for an app that adopts scenes (docs/lifecycle.md, "Scenes"): delivered
        /// when no callback runs, resuming a suspended app into the background for it.
        case scene(SceneOperation)
    }

    /// One scene operation: `connectScene`, `disconnectScene` or `discardScene`, on a session.
    package struct SceneOperation: Sendable, Equatable {
        package var callback: WireCallback
        /// The session's persistent identifier.
        package var session: String

        package init(_ callback: WireCallback, session: String) {
            self.callback = callback
            self.session = session
        }
    }

    package enum Action: Sendable, Equatable {
        /// Start the app process; its configuration carries `callbacks` (the launch's, which the
        /// app runs once it is ready: `launchCallbacks(activating:)`).
        case spawn(reason: String, callbacks: [WireCallbackRequest])
        case send(WireCallbackRequest)
        /// The app runs this request from its configuration (`launchCallbacks(activating:)`):
        /// take it as sent, without writing it.
        case began(WireCallbackRequest)
        /// Tell the app not to run the configured callback with this id (the launch's
        /// didBecomeActive): the host wants another step after didFinishLaunching.
        case withdraw(UInt64)
        case expire(taskIDs: [UInt64], remaining: Double)
        /// Run this BGTaskScheduler task's expiration handler.
        case expireWork(UInt64)
        /// Post AVAudioSession.interruptionNotification in the app: began, or ended.
        case audioInterruption(began: Bool)
        case freeze
        case thaw
        /// A watchdog decided to end the app: ask its main thread for its backtrace (the sample
        /// signal); `kill` follows when it comes or after `mainThreadSampleTimeout`.
        case sampleMainThread(Termination)
        /// End the process now, without a callback: SIGSYS for a forbidden system call, else
        /// SIGKILL to every process of the app.
        case kill(Termination)
        /// The process outlived its kill: SIGKILL to every process of the app again (frozen and
        /// stopped processes die of it too).
        case escalateKill
        case event(LifecycleEvent)
        /// The process is gone; write the report.
        case finished(Termination, ProcessExit)
    }
}
