import ArgumentParser
import AppHostRuntime
import Foundation

struct AppHost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apphost",
        abstract: "Run Swift app plugins through the iOS life cycle, each in its own process.",
        discussion: "Start with `apphost launch Name.app`; README.md explains the rest.",
        subcommands: [Launch.self, Ctl.self, Doctor.self, Reports.self]
    )
}

/// Options shared by the commands that use a host's state directory.
struct StateOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The host's state directory: reports and app containers.", valueName: "dir"))
    var stateDir: String?

    @Option(help: "Names this host among several on one machine; each instance has its own state.")
    var instance = "default"

    /// --state-dir, else $APPHOST_STATE_DIR, else /var/lib/apphost/INSTANCE for root (app users
    /// must be able to reach their containers), else $XDG_STATE_HOME/apphost/INSTANCE
    /// (~/.local/state/apphost/INSTANCE).
    var stateDirectory: URL {
        if let stateDir { return URL(fileURLWithPath: stateDir, isDirectory: true) }
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["APPHOST_STATE_DIR"] { return URL(fileURLWithPath: explicit, isDirectory: true) }
        if geteuid() == 0 { return URL(fileURLWithPath: "/var/lib/apphost/\(instance)", isDirectory: true) }
        let base = environment["XDG_STATE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state")
        return base.appendingPathComponent("apphost/\(instance)", isDirectory: true)
    }
}

/// Prints one line on standard error and exits with status 1: how every user error ends.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("apphost: \(message)\n".utf8))
    exit(1)
}
