import ArgumentParser
import AppHostRunner
import AppHostRuntime
import AppHostSystem
import Foundation

struct AppHost: AsyncParsableCommand {
    /// apphost's version, which `apphost --version` prints with the build's commit
    /// (Plugins/BuildInfo) and its Swift: "apphost 0.1.0 (c4f3427b1e2a, Swift 6.3.1)".
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "apphost",
        abstract: "Run Swift app plugins through the iOS life cycle, each in its own process.",
        discussion: "Start with `apphost launch Name.app`; README.md explains the rest.",
        version: "apphost \(version) (\(buildCommit), Swift \(Toolchain.swiftVersion))",
        subcommands: [Launch.self, Ctl.self, Container.self, Erase.self, Doctor.self, Reports.self]
    )

    /// The one-line error for a first argument that is no subcommand ("apphost lanch"), with
    /// the nearest subcommand; nil when the word is a subcommand or an option.
    static func unknownSubcommandMessage(_ word: String) -> String? {
        guard !word.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(word) else { return nil }
        if let nearest = NearestName.suggestion(for: word, among: names) {
            return "unknown command \(word); did you mean \(nearest)?"
        }
        return "unknown command \(word); commands: \(names.joined(separator: ", "))"
    }
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

/// Prints one line on standard error and exits with `status`: 1 for every user error, 64 for a
/// command line that is itself wrong (README.md, "Exit status").
func fail(_ message: String, status: Int32 = 1) -> Never {
    OutputQueue.standardOutput.drain()
    writeStandardError("apphost: \(message)\n")
    exit(status)
}
