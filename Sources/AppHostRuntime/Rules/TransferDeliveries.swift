import AppHostProtocol

/// What the host owes each app of its finished background transfers, and how it may wake the app
/// for them (docs/transfers.md, "Background transfers"): a pure ledger the host consults and keeps.
///
/// A finished transfer is sent to an app's run once (a run that was sent it and has not said it
/// was delivered is not sent it again; the next run is). A session that sends launch events wakes
/// its app (a resumption or a launch in the background, for
/// `handleEventsForBackgroundURLSession`) once at a time, and at most `maximumWakes` times for a
/// transfer that the wakes did not deliver: past that, it waits for the app to run for another
/// reason (an app that crashes at each wake is not relaunched forever).
struct TransferDeliveries {
    /// One background session of one app, whose wake is on its way.
    struct Session: Hashable {
        let app: String
        let name: String
    }

    static let maximumWakes = 3

    /// The run each transfer was last sent to, by transfer id.
    private var sentTo: [String: RunID] = [:]
    private var waking: Set<Session> = []
    /// Wakes for each transfer (by id) that did not end in its delivery.
    private var wakesWithoutDelivery: [String: Int] = [:]

    func wasSent(_ transfer: String, to run: RunID) -> Bool { sentTo[transfer] == run }

    mutating func sent(_ transfer: String, to run: RunID) { sentTo[transfer] = run }

    /// Whether the app's session has a wake on its way (its transfers go with that callback).
    func isWaking(_ session: Session) -> Bool { waking.contains(session) }

    /// The sessions to wake the app for now, in name order, each then marked waking and its
    /// transfers' wakes counted: those that send launch events and have a transfer not yet sent
    /// to the app's current run (`run`; nil: none), woken fewer than `maximumWakes` times
    /// without a delivery, and not already waking.
    mutating func sessionsToWake(app: String, owed: [TransferRecord], run: RunID?) -> [String] {
        let eligible = owed.filter { transfer in
            transfer.transfer.sessionSendsLaunchEvents && run.map { !wasSent(transfer.id, to: $0) } ?? true
                && wakesWithoutDelivery[transfer.id, default: 0] < Self.maximumWakes
        }
        let sessions = Set(eligible.map(\.transfer.session)).filter { !waking.contains(Session(app: app, name: $0)) }.sorted()
        for session in sessions {
            waking.insert(Session(app: app, name: session))
            for transfer in owed where transfer.transfer.session == session { wakesWithoutDelivery[transfer.id, default: 0] += 1 }
        }
        return sessions
    }

    /// The session's wake came (its callback is being sent): it is no longer on its way.
    mutating func woke(_ session: Session) { waking.remove(session) }

    /// The app's run ended: a wake whose callback was not sent is owed again.
    mutating func appNotRunning(_ app: String) { waking = waking.filter { $0.app != app } }

    /// The transfer was delivered, or cancelled: nothing more is owed of it.
    mutating func forget(_ transfer: String) {
        sentTo[transfer] = nil
        wakesWithoutDelivery[transfer] = nil
    }
}
