#if canImport(Glibc)
import Glibc
#endif
public import Foundation
import AppHostSystem
import CAppHostShims

/// An instance's state directory seen from outside a host: where an app's container is, and
/// erasing one app's data or everything (`apphost container`, `apphost erase`).
public struct StateDirectory: Sendable {
    public let url: URL

    public init(_ url: URL) { self.url = url }

    var containers: URL { url.appendingPathComponent("containers", isDirectory: true) }

    /// The bundle identifiers that have a container.
    public func identifiers() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: containers.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The bundle identifier `app` names: an identifier with a container, a bundle
    /// (`Name.app`, read for its CFBundleIdentifier), or, in any case, the last part of one
    /// identifier ("notes" for com.example.notes). Throws one line naming what there is.
    public func identifier(of app: String) throws -> String {
        if app.hasSuffix(".app"), let bundle = try? AppBundle(url: URL(fileURLWithPath: app)) { return bundle.identifier }
        let known = identifiers()
        if known.contains(app) { return app }
        let matches = known.filter { $0.lowercased() == app.lowercased() || $0.split(separator: ".").last?.lowercased() == app.lowercased() }
        if matches.count == 1 { return matches[0] }
        let listing = known.isEmpty ? "there are none" : "there are: \(known.joined(separator: ", "))"
        let problem = matches.isEmpty ? "no container for \(app)" : "\(app) could be any of \(matches.joined(separator: ", "))"
        throw SupervisorError("\(problem) in \(url.path); \(listing)", code: .noSuchApp)
    }

    /// The disk image that holds the container of the app `app` names, when one does and it is
    /// not mounted (no host runs the app): the container's directory is then empty.
    public func unmountedImage(of app: String) throws -> String? {
        let identifier = try identifier(of: app)
        let image = image(of: identifier)
        guard FileManager.default.fileExists(atPath: image) else { return nil }
        var container = stat()
        var parent = stat()
        guard stat(containers.appendingPathComponent(identifier).path, &container) == 0, stat(containers.path, &parent) == 0 else { return image }
        // A mounted file system is another device than the directory it is mounted on.
        return container.st_dev == parent.st_dev ? image : nil
    }

    /// Where the disk image of an app's container is (`storage: disk-image`).
    private func image(of identifier: String) -> String {
        url.appendingPathComponent("storage/containers/\(identifier).ext4").path
    }

    /// The container of the app `app` names.
    public func container(of app: String) throws -> URL {
        containers.appendingPathComponent(try identifier(of: app), isDirectory: true)
    }

    /// Erases one app's data (its container, its container's disk image, its pending background
    /// requests, its background transfers; its reports stay) or, without `app`, everything the instance keeps. Refused
    /// while a host runs on the instance. Returns what was removed, a line each.
    public func erase(_ app: String?) throws -> [String] {
        let paths = ControlPaths(stateDirectory: url)
        if let pid = paths.runningHost() {
            throw SupervisorError(
                "a host runs on \(url.path)\(pid > 0 ? " (pid \(pid))" : ""); end it first (apphost ctl --state-dir \(url.path) quit)",
                code: .instanceBusy)
        }
        guard let app else {
            guard FileManager.default.fileExists(atPath: url.path) else { return [] }
            unmountEverything(under: url.path)
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            for entry in entries { try FileManager.default.removeItem(at: url.appendingPathComponent(entry)) }
            return entries.sorted().map { url.appendingPathComponent($0).path }
        }
        let identifier = try identifier(of: app)
        let container = containers.appendingPathComponent(identifier).path
        let image = image(of: identifier)
        unmountEverything(under: container)
        var removed: [String] = []
        for path in [container, image] where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
            removed.append(path)
        }
        let store = ScheduleStore(stateDirectory: url)
        var (schedule, _) = store.load()
        if schedule.apps.removeValue(forKey: identifier) != nil {
            try store.save(schedule)
            removed.append("\(identifier)'s pending background requests")
        }
        let transfers = TransferStore(stateDirectory: url).erase(app: identifier)
        if transfers > 0 { removed.append("\(identifier)'s \(transfers) background transfer\(transfers == 1 ? "" : "s")") }
        let credentials = try TransferCredentialStore(stateDirectory: url).erase(app: identifier)
        if credentials > 0 { removed.append("\(identifier)'s \(credentials) kept transfer credential\(credentials == 1 ? "" : "s")") }
        return removed
    }

    /// Unmounts what a killed host left mounted at or below `path` (its disk images), deepest
    /// first.
    private func unmountEverything(under path: String) {
        let points = MountTable.entries().map(\.mountPoint).filter { $0 == path || $0.hasPrefix(path + "/") }
        for point in points.sorted(by: { $0.count > $1.count }) { _ = apphost_unmount(point, 1) }
    }
}
