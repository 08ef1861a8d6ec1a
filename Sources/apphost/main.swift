import AppHostRunner
import ArgumentParser

// The app process is this same binary, re-executed: that mode must not touch the command-line
// parser, so it is picked off before anything else runs.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == AppProcessRunner.argument {
    AppProcessRunner.main()
}
// So is the launch template, which forks app processes (docs/launching.md, "How apps are launched").
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == LaunchTemplate.argument {
    LaunchTemplate.main()
}

// A mistyped subcommand gets the nearest one ("did you mean launch?"), not the parser's
// "unexpected argument".
if CommandLine.arguments.count > 1, let message = AppHost.unknownSubcommandMessage(CommandLine.arguments[1]) {
    fail(message, status: 64)
}

do {
    var command = try AppHost.parseAsRoot()
    if let launch = command as? Launch {
        await launch.execute()
    } else {
        try command.run()
    }
} catch {
    AppHost.exit(withError: error)
}
