import ArgumentParser
import AppHostRuntime

/// The benchmark's command line; `scripts/benchmark` builds the release products and passes its
/// arguments here.
struct BenchmarkOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        // What users run: it builds the release products, then runs this with their arguments.
        commandName: "scripts/benchmark",
        abstract: "Measures apphost's launches, callbacks, suspensions and sandbox, each figure beside a baseline taken in the same run.",
        discussion: """
            Figures are milliseconds, median and p99, with the ratio of the medians. Without one of \
            the --*-only options the whole table runs (a few minutes); with --json, standard output \
            is one JSON object of the figures and the table goes to standard error.
            """)

    @Option(help: "Runs per figure (callback round trips: four times as many).")
    var runs = 50

    @Flag(help: "Write the figures as one JSON object on standard output; the table goes to standard error.")
    var json = false

    @Option(help: ArgumentHelp("Also launch and suspend N copies of Hello one after another in one host (at least 10).", valueName: "N"))
    var scale: Int?

    @Option(help: "The Hello bundle to launch; Probe.app beside it is used too. Both are built in release mode by scripts/benchmark.")
    var bundle = ".build/apps-release/Hello.app"

    @Flag(help: "Only launches of one Hello, taken in turn with bwrap's /bin/true (for profiling).")
    var launchOnly = false

    @Option(help: ArgumentHelp("The launcher of --launch-only and --scale-only: standby (the default), template or exec.", valueName: "launcher"))
    var launcher: String = Launcher.standby.rawValue

    @Option(help: ArgumentHelp("Only N callback round trips of one Hello (for profiling).", valueName: "N"))
    var callbacksOnly: Int?

    @Option(help: ArgumentHelp("Only the run of N apps in one host (at least 10).", valueName: "N"))
    var scaleOnly: Int?

    @Flag(help: "Only what the PID and mount namespaces cost a launch.")
    var namespacesOnly = false

    @Flag(help: "Only the transfer service against curl on the same URLs: a 1 GiB download, a 1 GiB upload, 1,000 downloads of 100 KiB.")
    var transfersOnly = false

    /// Whether one of the --*-only options narrows the run to its part.
    var narrowed: Bool { launchOnly || callbacksOnly != nil || scaleOnly != nil || namespacesOnly || transfersOnly }

    func validate() throws {
        guard Launcher(rawValue: launcher) != nil else { throw ValidationError("--launcher takes standby, template or exec") }
        guard runs >= 1 else { throw ValidationError("--runs takes a number of runs, at least 1") }
        // A tenth of the launches is at least one app.
        for (option, count) in [("--scale", scale), ("--scale-only", scaleOnly)] {
            if let count, count < 10 { throw ValidationError("\(option) takes a number of apps, at least 10 (e.g. \(option) 2000)") }
        }
        if let count = callbacksOnly, count < 1 { throw ValidationError("--callbacks-only takes a number of round trips, at least 1") }
        let only = [launchOnly, callbacksOnly != nil, scaleOnly != nil, namespacesOnly, transfersOnly].filter { $0 }.count
        if only > 1 { throw ValidationError("choose one of --launch-only, --callbacks-only, --scale-only, --namespaces-only and --transfers-only") }
    }
}
