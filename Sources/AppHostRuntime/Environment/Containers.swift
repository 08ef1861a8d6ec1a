#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol

/// Each app's container: `STATE/containers/BUNDLE-ID/` with Documents, Library and tmp, as on iOS.
/// It outlives the app's processes (an app finds its data again at its next launch).
enum Containers {
    static let directories = ["Documents", "Library", "Library/Caches", "Library/Preferences", "Library/Application Support", "tmp"]

    /// Creates the container (and, on a root host, gives it to the app's user: mode 0700, so
    /// no other app can enter it).
    static func prepare(for bundle: AppBundle, in stateDirectory: URL, owner: (uid: UInt32, gid: UInt32)?) throws -> URL {
        let container = stateDirectory.appendingPathComponent("containers", isDirectory: true)
            .appendingPathComponent(bundle.identifier, isDirectory: true)
        for directory in directories {
            try FileManager.default.createDirectory(
                at: container.appendingPathComponent(directory, isDirectory: true), withIntermediateDirectories: true)
        }
        try own(container, owner: owner, mode: 0o700)
        return container
    }

    /// An app group's shared container, `STATE/groups/GROUP-ID/`. On a root host it belongs to
    /// the group's gid with the set-group-id bit (mode 2770), so every member app can write it.
    static func prepareGroup(_ identifier: String, in stateDirectory: URL, gid: UInt32?) throws -> URL {
        let container = stateDirectory.appendingPathComponent("groups", isDirectory: true)
            .appendingPathComponent(identifier, isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        if let gid {
            guard chown(container.path, 0, gid) == 0, chmod(container.path, 0o2770) == 0 else {
                throw SystemCallError("chown \(container.path)", errno: errno)
            }
        }
        return container
    }

    /// Gives `directory` and everything in it to `owner`; the top directory gets `mode`.
    private static func own(_ directory: URL, owner: (uid: UInt32, gid: UInt32)?, mode: mode_t) throws {
        guard let owner else { return }
        var info = stat()
        if stat(directory.path, &info) == 0, info.st_uid == owner.uid, info.st_gid == owner.gid {
            guard chmod(directory.path, mode) == 0 else { throw SystemCallError("chmod \(directory.path)", errno: errno) }
            return
        }
        var paths = [directory.path]
        if let enumerator = FileManager.default.enumerator(atPath: directory.path) {
            for case let relative as String in enumerator { paths.append(directory.path + "/" + relative) }
        }
        for path in paths where lchown(path, owner.uid, owner.gid) != 0 {
            throw SystemCallError("chown \(path)", errno: errno)
        }
        guard chmod(directory.path, mode) == 0 else { throw SystemCallError("chmod \(directory.path)", errno: errno) }
    }

    /// The app process's whole environment: nothing of the host's leaks into it. HOME and the
    /// XDG variables point Foundation's directory look-ups into the container.
    static func environment(container: URL, parent: pid_t) -> [String] {
        let path = container.path
        return [
            "HOME=\(path)",
            // Foundation on Linux takes NSHomeDirectory() and the Documents look-up from this,
            // not from HOME; Caches and Application Support come from the XDG variables.
            "CFFIXED_USER_HOME=\(path)",
            "TMPDIR=\(path)/tmp/",
            "XDG_DATA_HOME=\(path)/Library/Application Support",
            "XDG_CACHE_HOME=\(path)/Library/Caches",
            "XDG_CONFIG_HOME=\(path)/Library/Preferences",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "LANG=C.UTF-8",
            // Without CAP_SYS_NICE libdispatch complains about every worker's priority, through
            // syslog's /dev/log (DESIGN.md, Known traps) or, set to stderr, into the app's output.
            "LIBDISPATCH_LOG=NO",
            // The backtracer spawns a helper on every crash; a crash should stay a plain crash.
            "SWIFT_BACKTRACE=enable=no",
            "APPHOST_PARENT_PID=\(parent)",
        ]
    }
}
