import ArgumentParser
import AppHostRuntime
import AppHostSystem
import Foundation

struct Ctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one command against the running host of an instance, or follow its events.",
        discussion: """
            apphost ctl [--instance NAME] [--state-dir DIR] COMMAND [ARGUMENTS...] runs one line of the command \
            language (home, open APP, fetch APP, ps, quit…; see apphost launch --help) against the host running \
            on that instance and prints its answer as the host's standard input would: in JSON if the host was \
            launched with --json. Exits 0 if the command did what it says, 1 if not, as a --script line would.
            apphost ctl events [--json] [--app APP] follows the host's events until interrupted (Ctrl-C).
            Only the user the host runs as, and root, may reach it.
            """)

    @OptionGroup var state: StateOptions

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("A command of the command language, or events.", valueName: "command"))
    var words: [String] = []

    func validate() throws {
        // The words go to the host as they are, so help is asked for here.
        if words.first == "--help" || words.first == "-h" { throw CleanExit.helpRequest(self) }
        guard !words.isEmpty else { throw ValidationError("name a command, e.g. apphost ctl ps, or apphost ctl events") }
    }

    func run() throws {
        let request = try Self.request(words)
        if case .events = request {
            // Following ends when interrupted, and that is a success (even where the parent
            // left SIGINT ignored or blocked, as a test runner may).
            var interruptions = sigset_t()
            sigemptyset(&interruptions)
            for number in [SIGINT, SIGTERM] {
                signal(number) { _ in _exit(0) }
                sigaddset(&interruptions, number)
            }
            pthread_sigmask(SIG_UNBLOCK, &interruptions, nil)
        }
        let paths = ControlPaths(stateDirectory: state.stateDirectory)
        let status: Int32
        do {
            status = try ControlClient.send(request, to: paths, output: { line in
                _ = writeStandardOutput(line + "\n")
            }, error: { line in
                writeStandardError(line + "\n")
            })
        } catch {
            fail(error.message)
        }
        throw ExitCode(status)
    }

    /// `events [--json] [--app APP]`, or a command line.
    static func request(_ words: [String]) throws -> ControlRequest {
        guard words.first == "events" else { return .run(words.joined(separator: " ")) }
        var json = false
        var app: String?
        var rest = words.dropFirst()[...]
        while let word = rest.popFirst() {
            switch word {
            case "--json": json = true
            case "--app":
                guard let name = rest.popFirst() else { throw ValidationError("--app needs an app's name") }
                app = name
            default: throw ValidationError("usage: apphost ctl events [--json] [--app APP]; not \(word)")
            }
        }
        return .events(json: json, app: app)
    }
}
