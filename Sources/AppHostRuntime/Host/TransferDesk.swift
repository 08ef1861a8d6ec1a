import Foundation
import AppHostProtocol

/// The host's background URL session transfers (docs/transfers.md, "Background transfers"; DESIGN.md,
/// "Subsystems"): the records kept in the state directory, what is owed to which run, the wakes
/// for it, the credentials the apps gave. It decides every rule of them — when a transfer runs,
/// the 3-wake cap, delivery to an app still launching, the force-quit gate, which transfers a
/// `handleEventsForBackgroundURLSession` carries, when a finished one wakes or launches its app,
/// where a server's challenge goes — and returns what the host should do as `Effect`s. It never
/// reaches into an app or another subsystem: the loop hands it small value snapshots (`App`,
/// `Facts`). Its state is private (`Transfers`, and the stores it writes off the loop).
/// Touched only on the host's loop.
final class TransferDesk {
    /// What the host does for the desk, in order.
    enum Effect {
        /// Send `message` to the app's run `run` (nothing if that run has ended).
        case send(HostMessage, app: String, run: RunID)
        /// Resume or launch the app in the background (launch reason `backgroundURLSession`)
        /// for the session's `handleEventsForBackgroundURLSession`.
        case wake(app: String, session: String)
        /// Say what happened to the app's transfers (an event of the app, or of the host while
        /// the app is not installed).
        case announce(app: String, String)
        /// Run the job on the transfer service; its updates come back through `update`.
        case start(TransferJob)
        /// Stop the job (a download's part file stays).
        case stop(String)
        /// Copy an upload's body into the store off the loop, then tell `bodyCopied`.
        case copyBody(transfer: String, UploadBody, to: URL)
        /// Once what was saved so far is on the disk, tell `kept` (a transfer just created).
        case whenSaved(created: String)
        /// A pass over the transfers (`pass`) once the loop's current work is done.
        case pass
        /// A pass when the earliest begin date still to come arrives, this long from now.
        case passAfter(Duration)
    }

    /// One run of an app, as the desk needs to see it.
    struct Run: Equatable {
        var id: RunID
        var state: AppState
        /// Between its spawn and its end (the machine's `isAlive`).
        var isAlive: Bool
        /// Alive and not being terminated.
        var isLive: Bool
        var isEnding: Bool
        /// Its launch callbacks are over.
        var launchFinished: Bool
        /// Between didFinishLaunching and the activation that follows.
        var justLaunched: Bool
        /// In the foreground, or in the background with a task open or a mode holding it: it
        /// goes on running (one in the background with neither is about to be suspended).
        var keptRunning: Bool

        /// Whether it runs its delegate now (progress calls, not while suspended).
        var hearsProgress: Bool { [.active, .inactive, .background].contains(state) }
    }

    /// An installed app, as the desk needs to see it.
    struct App: Equatable {
        var identifier: String
        var name: String
        /// The user force quit it: no background launch until they open it.
        var forceQuit: Bool
        /// Where its downloads are placed (`tmp` in it).
        var container: String
        var run: Run?
    }

    /// What the desk asks of the host: the conditions now, and the apps.
    struct Facts {
        /// The scheduler's clock (seconds since 1970), which `advance` moves.
        var now: Double
        var network: NetworkState
        var power: PowerState
        var shuttingDown = false
        /// The installed app of a bundle identifier; nil: not installed.
        var app: (String) -> App?
        /// What the app's container holds and its storage limit.
        var usage: (String) -> (bytes: UInt64, limit: UInt64)
    }

    private var state: Transfers

    init(store: TransferStore, hasService: Bool) {
        state = Transfers(store: store, hasService: hasService)
    }

    /// What was wrong with the store at start.
    var loadWarnings: [String] { state.loadWarnings }

    // MARK: Running

    /// Whether a pass must be queued (false: one is queued already).
    func queuePass() -> Bool {
        defer { state.passQueued = true }
        return !state.passQueued
    }

    /// The queued pass runs now (`reconsider`, then `deliver` to each of `owedApps`).
    func passRuns() { state.passQueued = false }

    /// The apps owed a delivery: a transfer's end, or a challenge.
    var owedApps: Set<String> { Set(state.records.filter(\.isOwed).map(\.app)) }

    /// Starts the transfers whose conditions hold and pauses those whose no longer do; `started`
    /// names those started, for the conditions line.
    func reconsider(_ facts: Facts) -> (started: [String], effects: [Effect]) { state.reconsider(facts) }

    /// The timer for a begin date fired.
    func beginTimerFired() { state.beginArmed = nil }

    /// The service's report on a transfer.
    func update(_ id: String, _ update: TransferUpdate, _ facts: Facts) -> [Effect] { state.update(id, update, facts) }

    // MARK: The apps

    /// An app's message about its transfers (`app.run` sent it); returns a violation, if any.
    func receive(_ message: AppMessage, from app: App, networkEntitled: Bool, _ facts: Facts) -> (violation: String?, effects: [Effect]) {
        state.receive(message, from: app, networkEntitled: networkEntitled, facts)
    }

    /// An upload's body was copied (`failure`: why not).
    func bodyCopied(_ id: String, failure: String?, _ facts: Facts) -> [Effect] { state.bodyCopied(id, failure: failure, facts) }

    /// A transfer just created is on the disk: it is said created and may start.
    func kept(_ id: String, _ facts: Facts) -> [Effect] { state.kept(id, facts) }

    /// Hands the app what it is owed: at once while it runs, else by wakes.
    func deliver(to app: App, _ facts: Facts) -> [Effect] { state.deliver(to: app, facts) }

    /// The finished transfers of `session` for the `handleEventsForBackgroundURLSession` being
    /// sent to `app`'s run.
    func events(forWakeOf session: String, _ app: App) -> [WireTransferEvent] { state.events(forWakeOf: session, app) }

    /// A callback on its way to the app: the wake of a session
    /// (`handleEventsForBackgroundURLSession`) carries its finished transfers, each marked sent
    /// to the run (a download's file moved into the app's `tmp` first). Any other is sent as it is.
    func prepare(_ request: WireCallbackRequest, for app: @autoclosure () -> App) -> WireCallbackRequest {
        guard request.callback == .handleEventsForBackgroundURLSession, let session = request.event?.urlSession else { return request }
        var request = request
        request.event?.transfers = state.events(forWakeOf: session, app())
        return request
    }

    /// Cancels every unfinished transfer of the app (a force quit), each told at its next run.
    func cancelAll(of app: String, because reason: String, reasonCode: Int) -> [Effect] {
        state.cancelAll(of: app, because: reason, reasonCode: reasonCode)
    }

    /// The transfers a launch of the app hands its sessions (`getAllTasks`).
    func atLaunch(of app: String) -> [WireTransfer] {
        state.records.filter { $0.app == app && $0.phase != .kept }.map(\.transfer)
    }

    // MARK: Listings

    /// Every transfer kept, for `transfers`.
    func listing(_ facts: Facts) -> [TransferListing] { state.records.map { state.listing($0, facts) } }

    /// The app's transfers, for `ps` and its report.
    func listing(of app: String, _ facts: Facts) -> [TransferListing] {
        state.records.filter { $0.app == app }.map { state.listing($0, facts) }
    }

    /// `then` runs (on the store's writer) once what was saved so far is on the disk.
    func whenSaved(_ then: (@Sendable () -> Void)?) { state.store.write([:], then: then) }

    /// Returns once what was saved so far is on the disk (off the loop: the store's writer waits).
    var flush: @Sendable () -> Void { { [store = state.store] in store.flush() } }
}
