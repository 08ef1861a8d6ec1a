import Foundation

/// Each app's container: `STATE/containers/BUNDLE-ID/` with Documents, Library and tmp, as on iOS.
/// It outlives the app's processes (an app finds its data again at its next launch).
enum Containers {
    static let directories = ["Documents", "Library", "Library/Caches", "Library/Preferences", "Library/Application Support", "tmp"]

    static func prepare(for bundle: AppBundle, in stateDirectory: URL) throws -> URL {
        let container = stateDirectory.appendingPathComponent("containers", isDirectory: true)
            .appendingPathComponent(bundle.identifier, isDirectory: true)
        for directory in directories {
            try FileManager.default.createDirectory(
                at: container.appendingPathComponent(directory, isDirectory: true), withIntermediateDirectories: true)
        }
        return container
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
