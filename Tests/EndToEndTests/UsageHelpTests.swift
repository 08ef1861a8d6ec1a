import Foundation
import Testing

/// What a new user types first: `--version`, a mistyped subcommand, and `help` in the command
/// language.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct UsageHelpTests {
    /// It says which build (issue 41): the version, the commit it was built from (Plugins/BuildInfo)
    /// and its Swift, which the apps must be built with.
    @Test func versionIsOneLineNamingTheBuild() throws {
        let result = try runApphost(["--version"])
        #expect(result.status == 0)
        #expect(result.output.split(separator: "\n").count == 1)
        let build = try #require(result.output.wholeMatch(of: /apphost 0\.\d+\.\d+ \(([0-9a-f]{12}(-modified)?|unknown), Swift 6\.[0-9.]+( or later)?\)\n/))
        let commit = try runGit(["rev-parse", "--short=12", "HEAD"])
        #expect(build.1.hasPrefix(commit), "built from \(commit)")
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

/// `git ARGUMENTS` in this checkout, its output's first line ("" if git fails).
private func runGit(_ arguments: [String]) throws -> String {
    let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["git", "-c", "safe.directory=\(checkout.path)", "-C", checkout.path] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return "" }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
}
