import AppHostRuntime
import Testing
@testable import apphost

/// The command language that `apphost launch` reads from `--script` and standard input.
@Suite struct HostCommandTests {
    @Test func everyCommandParses() throws {
        #expect(try HostCommand.parse("home") == .home)
        #expect(try HostCommand.parse("  open Notes  ") == .open("Notes"))
        #expect(try HostCommand.parse("interrupt Notes 2.5") == .interrupt("Notes", .milliseconds(2500)))
        #expect(try HostCommand.parse("interrupt Notes") == .interrupt("Notes", nil))
        #expect(try HostCommand.parse("terminate com.example.notes") == .terminate("com.example.notes"))
        #expect(try HostCommand.parse("wake Notes") == .wake("Notes"))
        #expect(try HostCommand.parse("sleep 0.5") == .sleep(.milliseconds(500)))
        #expect(try HostCommand.parse("wait Notes suspended") == .wait("Notes", .suspended, timeout: .seconds(30)))
        #expect(try HostCommand.parse("wait Notes active 3") == .wait("Notes", .active, timeout: .seconds(3)))
        #expect(try HostCommand.parse("memory-warning") == .memoryWarning(nil))
        #expect(try HostCommand.parse("memory-pressure") == .memoryPressure(nil))
        #expect(try HostCommand.parse("memory-pressure 1.5") == .memoryPressure(1_572_864))
        #expect(try HostCommand.parse("ps") == .ps)
        #expect(try HostCommand.parse("storage-pressure") == .storagePressure)
        #expect(try HostCommand.parse("fetch Weather") == .fetch("Weather"))
        #expect(try HostCommand.parse("run-task Weather com.example.refresh") == .runTask("Weather", identifier: "com.example.refresh"))
        #expect(try HostCommand.parse("expire Weather") == .expire("Weather", identifier: nil))
        #expect(try HostCommand.parse("push Weather alert.json") == .push("Weather", file: "alert.json"))
        #expect(try HostCommand.parse("power battery") == .power(.battery))
        #expect(try HostCommand.parse("network offline") == .network(.offline))
        #expect(try HostCommand.parse("advance 86400") == .advance(.seconds(86400)))
        #expect(try HostCommand.parse("advance reset") == .resetClock)
        #expect(try HostCommand.parse("tasks") == .tasks)
        #expect(try HostCommand.parse("quit") == .quit)
        #expect(try HostCommand.parse("help") == .help)
        #expect(try HostCommand.parse("") == nil)
        #expect(try HostCommand.parse("# a comment") == nil)
    }

    @Test func commandsWaitForTheTransitionsOfTheAppsTheyConcern() throws {
        #expect(try HostCommand.parse("fetch Weather")?.settling == .app("Weather"))
        #expect(try HostCommand.parse("memory-warning Notes")?.settling == .app("Notes"))
        for line in ["home", "open Notes", "tasks", "advance 60", "advance reset", "ps", "memory-warning", "power battery"] {
            #expect(try HostCommand.parse(line)?.settling == .everyApp, "\(line)")
        }
        for line in ["sleep 1", "wait Notes active", "quit"] {
            #expect(try HostCommand.parse(line)?.settling == .nothing, "\(line)")
        }
    }

    @Test func mistakesSayWhatIsWrong() {
        #expect(throws: CommandError("usage: open APP")) { try HostCommand.parse("open") }
        #expect(throws: CommandError("SECONDS must be a number of seconds, not soon")) { try HostCommand.parse("sleep soon") }
        #expect(throws: CommandError("STATE must be one of inactive, active, background, suspended, terminated; not asleep")) {
            try HostCommand.parse("wait Notes asleep")
        }
        #expect(throws: CommandError("MIB must be a number of MiB the apps must fit in, not lots")) { try HostCommand.parse("memory-pressure lots") }
        #expect(throws: CommandError("power must be plugged or battery, not mains")) { try HostCommand.parse("power mains") }
        #expect(throws: CommandError("network must be online or offline, not wifi")) { try HostCommand.parse("network wifi") }
        #expect(throws: CommandError("usage: run-task APP IDENTIFIER")) { try HostCommand.parse("run-task Weather") }
        #expect(throws: CommandError("usage: storage-pressure")) { try HostCommand.parse("storage-pressure 100") }
        #expect(throws: CommandError("SECONDS must be a number of seconds, not tomorrow")) { try HostCommand.parse("advance tomorrow") }
        #expect(throws: CommandError("unknown command launch; commands: home, open, interrupt, wake, terminate, memory-warning, memory-pressure, storage-pressure, fetch, run-task, expire, push, voip-push, audio-interrupt, audio-resume, location, authorize, power, network, advance, tasks, sleep, wait, ps, help, quit")) {
            try HostCommand.parse("launch Notes")
        }
    }

    @Test func helpListsEveryCommandOnOneLineEach() {
        let lines = HostCommand.helpLines
        #expect(lines.count == HostCommand.summaries.count)
        for verb in ["home", "open APP", "run-task APP IDENTIFIER", "wait APP STATE [TIMEOUT]", "ps", "help", "quit"] {
            #expect(lines.contains { $0.hasPrefix(verb + " ") }, "help lists \(verb)")
        }
        // Every command help names is one the parser knows.
        for summary in HostCommand.summaries {
            let verb = String(summary.usage.prefix { $0 != " " })
            do { _ = try HostCommand.parse(verb) } catch {
                #expect(!error.description.hasPrefix("unknown command"), "\(verb) is a command")
            }
        }
    }

    @Test func anUnknownCommandSuggestsTheNearest() {
        #expect(throws: CommandError("unknown command hom; did you mean home? (help lists the commands)")) { try HostCommand.parse("hom") }
        #expect(throws: CommandError("unknown command termnate; did you mean terminate? (help lists the commands)")) { try HostCommand.parse("termnate Notes") }
    }

    @Test func aMistypedSubcommandSuggestsTheNearest() {
        #expect(AppHost.unknownSubcommandMessage("lanch") == "unknown command lanch; did you mean launch?")
        #expect(AppHost.unknownSubcommandMessage("launch") == nil)
        #expect(AppHost.unknownSubcommandMessage("--version") == nil)
        #expect(AppHost.unknownSubcommandMessage("zzz") == "unknown command zzz; commands: launch, ctl, container, erase, doctor, reports, help")
    }
}
