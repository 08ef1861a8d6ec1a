#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// App users on a root host (docs/sandbox.md, "The sandbox"): each app gets its own uid and gid, and each
/// app group its own gid, from the policy's range; with per-app users off, every app gets one
/// shared uid from it. No app runs as root. Allocations are kept in
/// `STATE/app-users.json`, so an app finds its container with the same owner at every launch.
/// Ids that /etc/passwd or /etc/group already use are skipped.
struct AppUsers {
    struct Table: Codable, Equatable {
        var apps: [String: UInt32] = [:]
        var groups: [String: UInt32] = [:]
    }

    /// STATE/app-users.json.
    let store: StateStore<Table>
    let range: ClosedRange<UInt32>
    private(set) var table: Table
    /// Every id the table holds, and the lowest id not yet looked at for a new allocation (ids are
    /// never given back, so a search never starts over: thousands of apps cost one pass).
    private var used: Set<UInt32>
    private var next: UInt32
    /// Whether ids were reserved since the table was last written.
    private(set) var hasUnsavedReservations = false

    /// A table that cannot be read is kept aside, named in `loadWarning`: ids are then given
    /// afresh, and the containers of earlier apps get their new owners at their launch.
    private(set) var loadWarning: String?

    init(stateDirectory: URL, range: ClosedRange<UInt32>) {
        store = StateStore(
            path: stateDirectory.appendingPathComponent("app-users.json").path, what: "the app users table",
            encode: { Array(Self.json($0)) }, decode: { try JSONDecoder().decode(Table.self, from: Data($0)) })
        self.range = range
        let (loaded, warning) = store.load()
        table = loaded ?? Table()
        loadWarning = warning
        used = Set(table.apps.values).union(table.groups.values)
        next = range.lowerBound
    }

    /// Gives an installed app its uid without writing the table yet: a host installing thousands
    /// of apps writes it once (`saveReservations`), not once per app at its first launch.
    mutating func reserve(app identifier: String) throws {
        guard table.apps[identifier] == nil else { return }
        table.apps[identifier] = try allocate()
        hasUnsavedReservations = true
    }

    /// Writes reservations not written yet; before any app runs under a reserved id.
    mutating func saveReservations() throws {
        guard hasUnsavedReservations else { return }
        try save()
        hasUnsavedReservations = false
    }

    /// The app's uid (also its primary gid).
    mutating func uid(forApp identifier: String) throws -> UInt32 { try id(for: identifier, in: \.apps) }

    /// The one uid (also gid) every app shares when per-app users are off: never root. Kept
    /// under a name no bundle identifier can have.
    mutating func sharedUID() throws -> UInt32 { try id(for: "*", in: \.apps) }

    /// The gid shared by the apps of an app group.
    mutating func gid(forGroup identifier: String) throws -> UInt32 { try id(for: identifier, in: \.groups) }

    private mutating func id(for identifier: String, in map: WritableKeyPath<Table, [String: UInt32]>) throws -> UInt32 {
        if let known = table[keyPath: map][identifier] {
            try saveReservations()
            return known
        }
        let id = try allocate()
        table[keyPath: map][identifier] = id
        try save()
        hasUnsavedReservations = false
        return id
    }

    /// Why an app user could not reach `path` (a directory on the way that others may not
    /// enter, or the file itself not readable by others), or nil if it can.
    static func unreachableReason(_ path: String, needsRead: Bool = true) -> String? {
        var components = URL(fileURLWithPath: path).standardizedFileURL.pathComponents
        var current = ""
        let target = components.removeLast()
        for component in components {
            current = current == "" ? component : (current == "/" ? "/" + component : current + "/" + component)
            var info = stat()
            guard stat(current, &info) == 0 else { continue }
            if info.st_mode & S_IXOTH == 0 {
                return "\(current) is mode \(String(info.st_mode & 0o7777, radix: 8)), which app users may not enter"
            }
        }
        var info = stat()
        let file = (current == "/" ? "" : current) + "/" + target
        // A file must be readable; a directory on the way to a container need only be passable.
        if stat(file, &info) == 0, info.st_mode & (needsRead ? S_IROTH : S_IXOTH) == 0 {
            return "\(file) is mode \(String(info.st_mode & 0o7777, radix: 8)), which app users may not \(needsRead ? "read" : "enter")"
        }
        return nil
    }

    private mutating func allocate() throws -> UInt32 {
        while range.contains(next) {
            let candidate = next
            next = candidate == range.upperBound ? candidate : candidate + 1
            if !used.contains(candidate) && getpwuid(candidate) == nil && getgrgid(candidate) == nil {
                used.insert(candidate)
                return candidate
            }
            if candidate == range.upperBound { break }
        }
        throw SupervisorError("no free id left in the app user range \(range.lowerBound)-\(range.upperBound); widen it with --app-user-range", code: .unavailable)
    }

    /// Written before any app runs under a new id: a host killed right after must not give the
    /// id to another app. Rare (a batch of new apps writes it once), so on the caller's thread.
    private func save() throws {
        try store.saveNow(table)
    }

    /// The table as JSON, written by hand: it is saved at each new app's first launch and grows
    /// with the apps a host has known, and at two thousand apps Foundation's JSONEncoder (with
    /// sorted keys) took a third of the host's time per launch; this takes a few percent of that.
    static func json(_ table: Table) -> Data {
        func object(_ map: [String: UInt32]) -> String {
            "{" + map.map { "\(quoted($0.key)):\($0.value)" }.joined(separator: ",") + "}"
        }
        func quoted(_ text: String) -> String {
            var quoted = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": quoted += "\\\""
                case "\\": quoted += "\\\\"
                case _ where scalar.value < 0x20: quoted += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                default: quoted.unicodeScalars.append(scalar)
                }
            }
            return quoted + "\""
        }
        return Data(("{\"apps\":" + object(table.apps) + ",\"groups\":" + object(table.groups) + "}\n").utf8)
    }
}
