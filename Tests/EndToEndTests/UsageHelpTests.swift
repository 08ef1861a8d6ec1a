import Foundation
import Testing

/// What a new user types first: `--version`, a mistyped subcommand, and `help` in the command
/// language.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct UsageHelpTests {
    @Test func versionIsOneLine() throws {
        let result = try runApphost(["--version"])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("apphost 0."))
        #expect(result.output.split(separator: "\n").count == 1)
    }

    @Test func aMistypedSubcommandSuggestsTheNearest() throws {
        let result = try runApphost(["lanch", "Notes.app"])
        #expect(result.status == 64, "a command line that is wrong, as an unknown option is")
        #expect(result.error == "apphost: unknown command lanch; did you mean launch?\n")
    }

    @Test func helpListsTheCommandsAndAnUnknownOneGetsTheNearest() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        try Data("help\nhom\n".utf8).write(to: script)
        let result = try runApphost([
            "launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, try scratch.bundle("Helped").path,
        ])
        #expect(result.status == 1, "the mistyped command fails the script")
        let lines = result.output.split(separator: "\n")
        for usage in ["home ", "open APP ", "wait APP STATE [TIMEOUT] ", "help ", "quit "] {
            #expect(lines.contains { $0.hasPrefix(usage) }, "help lists \(usage)")
        }
        #expect(result.error.contains("unknown command hom; did you mean home?"))
    }
}
