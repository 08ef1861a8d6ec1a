import Foundation

/// The installed apps (docs/internals.md, "How the code is laid out"): each by its `AppID`, its bundle identifier and
/// its names, in installation order; and what each app's machine is, followed at each of its
/// inputs (`follow`), so that what is asked after every state change or command looks at these
/// sets, not at each of thousands of apps: the apps between steps (a settle of every app waits
/// for them), the apps that run (live, not suspended: the sampler runs while there is one), and
/// the apps in the foreground. Apps are never removed from a running host, so an `AppID` is an
/// app's for the host's life. Touched only on the host's loop.
final class AppTable: RandomAccessCollection {
    private var records: [AppRecord] = []
    private var byIdentifier: [String: AppID] = [:]
    /// Each app by each of its names, lowercased (`AppRecord.names`; a name two apps share is the
    /// first's).
    private var byName: [String: AppID] = [:]
    private(set) var unsettled: Set<AppID> = []
    private(set) var running: Set<AppID> = []
    private(set) var foreground: Set<AppID> = []

    var startIndex: Int { records.startIndex }
    var endIndex: Int { records.endIndex }
    subscript(position: Int) -> AppRecord { records[position] }
    subscript(id: AppID) -> AppRecord { records[id.index] }

    /// Adds an app; throws if another has its bundle identifier.
    func install(_ bundle: AppBundle) throws(SupervisorError) -> AppRecord {
        if let other = record(identifier: bundle.identifier) {
            throw SupervisorError(
                "\(bundle.url.lastPathComponent) and \(other.bundle.url.lastPathComponent) have the same CFBundleIdentifier \(bundle.identifier)",
                code: .invalidBundle)
        }
        let record = AppRecord(bundle: bundle, id: AppID(index: records.count))
        byIdentifier[bundle.identifier] = record.id
        for name in record.names where byName[name] == nil { byName[name] = record.id }
        records.append(record)
        return record
    }

    func record(identifier: String) -> AppRecord? {
        byIdentifier[identifier].map { records[$0.index] }
    }

    /// The app a command names (by name, identifier or directory, in any case), or an error that
    /// lists the installed apps and suggests the nearest name.
    func record(named name: String) throws(SupervisorError) -> AppRecord {
        if let id = byName[name.lowercased()] { return records[id.index] }
        let known = records.map(\.bundle.name).joined(separator: ", ")
        let nearest = NearestName.suggestion(for: name, among: records.map(\.bundle.name)).map { "did you mean \($0)? " } ?? ""
        throw SupervisorError("no app named \(name); \(nearest)installed: \(known.isEmpty ? "none" : known)", code: .noSuchApp)
    }

    /// The apps of these bundle identifiers that are installed, in installation order.
    func records(identifiers: some Sequence<String>) -> [AppRecord] {
        identifiers.compactMap { byIdentifier[$0] }.sorted().map { records[$0.index] }
    }

    /// Takes in that `record`'s machine may have changed. Called after each of its inputs,
    /// before their actions (the only place a machine changes).
    func follow(_ record: AppRecord) {
        let id = record.id
        let machine = record.run?.machine
        update(&unsettled, id, !(machine?.isSettled ?? true))
        update(&running, id, machine.map { $0.isLive && $0.state != .suspended } ?? false)
        update(&foreground, id, machine.map { $0.isAlive && $0.isInForeground } ?? false)
    }

    /// One app in the foreground: the apps to send to the background as `opening` comes there
    /// (nil: none comes, the user went home), in installation order.
    func leavingTheForeground(as opening: AppID?) -> [AppID] {
        foreground.sorted().filter { $0 != opening }
    }

    private func update(_ set: inout Set<AppID>, _ id: AppID, _ member: Bool) {
        if member { set.insert(id) } else { set.remove(id) }
    }
}
