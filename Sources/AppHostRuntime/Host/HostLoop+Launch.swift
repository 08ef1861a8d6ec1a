#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostProtocol
import AppHostSandbox
import AppHostSystem
import CAppHostShims

extension HostLoop {
    // MARK: Running an app

    func app(named name: String) throws -> AppRecord {
        try apps.record(named: name)
    }

    func currentState(of record: AppRecord) -> AppState {
        record.run?.machine.state ?? .notRunning
    }

    /// Sends to the background what is in the foreground as `opening` comes there (nil: home).
    func sendForegroundAppAway(except opening: AppRecord?) {
        for id in apps.leavingTheForeground(as: opening?.id) {
            guard let run = apps[id].run else { continue }
            handle(apps[id], run, .moveToBackground)
        }
    }

    /// Launches the app; with `event`, into the background for it.
    func start(_ record: AppRecord, kind: LaunchKind, reason: String, event: BackgroundEvent? = nil) {
        guard !waiters.isShuttingDown else { return }
        // A new process: no scene is connected yet (the sessions stay).
        if record.bundle.adoptsScenes { scenes.processStarts(record.bundle.identifier) }
        let modes = Set(ContinuousMode.allCases.filter { record.bundle.backgroundModes.contains($0.backgroundMode) })
        let run = record.begin(
            LifecycleMachine(policy: configuration.policy, continuousModes: modes, activatesOnLaunch: !record.bundle.adoptsScenes), now: clock.now)
        handle(record, run, event.map { .deliver($0, reason: reason) } ?? .launch(kind, reason: reason))
    }

    /// Starts the app's process for the machine's spawn, with the launch's `callbacks` (which
    /// its configuration carries): the launchpad launches it (the standby, or a process started
    /// off the loop); the app's events wait meanwhile. What came of it comes back as an input,
    /// `.launched`, a launch refused here too; only a standby taken is watched at once.
    func spawn(_ record: AppRecord, _ run: AppRun, reason: String, callbacks: [WireCallbackRequest]) {
        run.isSpawning = true
        // A standby (or the template) being made is this launch's: it waits for it off the
        // loop, and takes it.
        if launchpad.isPreparing {
            launchpad.afterSpawnThread { [weak self, id = run.id] in
                self?.post(.standbyAwaited(id, reason: reason, callbacks: callbacks))
            }
            return
        }
        let refused = { [self] (reason: String) in post(.launched(run.id, LaunchResult(outcome: .failed(reason)))) }
        let bundle = record.bundle
        // Past what the machine's limits allow (HostCapacity). The app being launched is among
        // those installed, not yet alive.
        if let refusal = facts.capacity.refusal(
            launching: bundle.name, installed: apps.count, running: { apps.reduce(0) { $0 + ($1.run?.process?.isClosed == false ? 1 : 0) } }) {
            return refused(refusal)
        }
        let user: (uid: UInt32, groups: [UInt32])?
        do {
            user = try storage.owner(of: bundle)
        } catch {
            return refused("cannot prepare the app's container: \(error)")
        }
        // Storage limits first: the file systems (or quotas) the containers live in.
        // Disk images are made and mounted off the loop; the launch goes on once they are.
        if prepareStorage(for: bundle, run: run, reason: reason, callbacks: callbacks) { return }
        let container = Containers.url(for: bundle, in: configuration.stateDirectory)
        let order = LaunchOrder(
            run: run.id, bundle: bundle, container: container, user: user,
            memoryLimit: resources.memoryLimit(state: .launching, inForeground: run.machine.isInForeground).bytes,
            message: launchMessage(record, run, container: container, reason: reason, callbacks: callbacks))
        guard let result = launchpad.launch(order) else { return }
        // The standby took it: its process is watched now, so that its first messages are read
        // without waiting for another turn of the loop (a worker thread's wake-up, on a loaded
        // machine a millisecond). A launch that failed comes back as an input.
        if case .started = result.outcome { launched(result, record, run) } else { post(.launched(run.id, result)) }
    }

    /// Watches a started app process: its control socket, its end, its memory group and its
    /// diagnostics, each handled on the queue.
    func watch(_ process: AppProcess, _ record: AppRecord, _ run: AppRun) {
        let id = run.id
        process.start(
            on: queue, timers: timers, reader: controlReader,
            control: { [weak self] in self?.receive(.control(id)) }, exit: { [weak self] in self?.receive(.exited(id)) },
            memory: { [weak self] in self?.receive(.memoryFull(id)) }, diagnostics: { [weak self] in self?.receive(.diagnostics(id)) })
    }

    /// What the app process is told before it runs, but its sandbox (the launchpad's): who it
    /// is, where its container is, and what the other subsystems hold for this launch.
    private func launchMessage(
        _ record: AppRecord, _ run: AppRun, container: URL, reason: String, callbacks: [WireCallbackRequest]
    ) -> WireConfiguration {
        let bundle = record.bundle
        var message = WireConfiguration(
            bundleIdentifier: bundle.identifier, bundleName: bundle.name, bundlePath: bundle.url.path,
            pluginPath: bundle.pluginURL.path, delegateClassName: bundle.delegateClassName,
            containerPath: container.path, launchReason: reason, capabilities: bundle.capabilities,
            openFileLimit: UInt64(configuration.policy.openFileLimit), sandbox: WireSandbox(entitlements: [], writablePaths: []))
        message.launchPayload = run.machine.launchNotificationPayload
        message.backgroundTasks = backgroundTasksConfiguration(for: bundle)
        message.locationAuthorization = location.authorization(of: bundle.identifier)?.wireName
        message.deliveredNotifications = deliveredNotifications(of: record)
        message.logLevel = configuration.appLogLevel.rawValue
        message.scenes = bundle.sceneManifest
        if bundle.adoptsScenes {
            message.sceneSessions = scenes.sessionsForLaunch(bundle.identifier)
        }
        message.transfers = transferDesk.atLaunch(of: bundle.identifier)
        // The app runs them without the host's sending them (docs/launching.md, "How apps are launched").
        message.launchCallbacks = callbacks
        return message
    }

    func failToSpawn(_ record: AppRecord, _ run: AppRun, _ reason: String) {
        spawnEnded(record, run)
        handle(record, run, .launchFailed(reason))
        handle(record, run, .exited(ProcessExit(status: .exited(127))))
    }
}
