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
        #expect(try HostCommand.parse("transfers") == .transfers)
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
        #expect(throws: CommandError("usage: open APP [--new-scene]")) { try HostCommand.parse("open") }
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
        #expect(throws: CommandError("unknown command launch; commands: home, open, close-scene, discard-scene, scenes, interrupt, switcher, wake, terminate, memory-warning, memory-pressure, storage-pressure, fetch, run-task, expire, push, voip-push, audio-interrupt, audio-resume, location, authorize, notifications, tap-notification, power, network, advance, tasks, transfers, sleep, wait, ps, help, quit")) {
            try HostCommand.parse("launch Notes")
        }
    }

    @Test func continuousModeCommandsParse() throws {
        #expect(try HostCommand.parse("voip-push Phone call.json") == .voipPush("Phone", file: "call.json"))
        #expect(try HostCommand.parse("audio-interrupt Player") == .audioInterrupt("Player"))
        #expect(try HostCommand.parse("audio-resume Player") == .audioResume("Player"))
        #expect(try HostCommand.parse("location set 48.8584,2.2945") == .locationSet(Coordinate(latitude: 48.8584, longitude: 2.2945)))
        #expect(try HostCommand.parse("location route run.gpx") == .locationRoute(file: "run.gpx", speed: nil))
        #expect(try HostCommand.parse("location route run.gpx --speed 3.5") == .locationRoute(file: "run.gpx", speed: 3.5))
        #expect(try HostCommand.parse("location clear") == .locationClear)
        #expect(try HostCommand.parse("authorize RunTracker location whenInUse") == .authorize("RunTracker", .whenInUse))
        #expect(try HostCommand.parse("location set 1,2")?.settling == .everyApp)
        #expect(try HostCommand.parse("voip-push Phone call.json")?.settling == .app("Phone"))
        #expect(try HostCommand.parse("authorize Runner location always")?.settling == .app("Runner"))
    }

    @Test func notificationCommandsParse() throws {
        #expect(try HostCommand.parse("authorize Probe notifications granted") == .authorizeNotifications("Probe", .granted))
        #expect(try HostCommand.parse("authorize Probe notifications denied")?.settling == .app("Probe"))
        #expect(try HostCommand.parse("notifications") == .notifications)
        #expect(try HostCommand.parse("tap-notification Probe hello") == .tapNotification("Probe", identifier: "hello"))
        #expect(try HostCommand.parse("tap-notification Probe hello")?.settling == .everyApp)
        #expect(throws: CommandError("a notification authorization is granted or denied, not maybe")) {
            try HostCommand.parse("authorize Probe notifications maybe")
        }
        #expect(try HostCommand.parse("tap-notification Probe hello reply --text On  my way")
            == .tapNotification("Probe", identifier: "hello", action: "reply", text: "On my way"), "the text is the rest of the line")
        #expect(try HostCommand.parse("tap-notification Probe hello dismiss") == .tapNotification("Probe", identifier: "hello", action: "dismiss"))
        #expect(throws: CommandError("usage: tap-notification APP IDENTIFIER [ACTION] [--text TEXT]")) { try HostCommand.parse("tap-notification Probe") }
        #expect(throws: CommandError("usage: tap-notification APP IDENTIFIER [ACTION] [--text TEXT]")) { try HostCommand.parse("tap-notification Probe hello reply --text") }
        #expect(throws: CommandError("usage: tap-notification APP IDENTIFIER [ACTION] [--text TEXT]")) { try HostCommand.parse("tap-notification Probe hello reply extra") }
        #expect(throws: CommandError("usage: notifications")) { try HostCommand.parse("notifications all") }
        #expect(HostCommand.helpLines.contains { $0.hasPrefix("tap-notification APP IDENTIFIER") })
    }

    @Test func continuousModeMistakesSayWhatIsWrong() {
        let usage = "usage: location set LAT,LON | location route FILE.gpx [--speed M/S] | location clear"
        #expect(throws: CommandError(usage)) { try HostCommand.parse("location") }
        #expect(throws: CommandError(usage)) { try HostCommand.parse("location go 1,2") }
        #expect(throws: CommandError(usage)) { try HostCommand.parse("location route run.gpx fast") }
        #expect(throws: CommandError("a position is LATITUDE,LONGITUDE in degrees, e.g. 48.8584,2.2945; got north")) {
            try HostCommand.parse("location set north")
        }
        #expect(throws: CommandError("latitude must be within -90…90 and longitude within -180…180 degrees; got 95.0,2.0")) {
            try HostCommand.parse("location set 95,2")
        }
        #expect(throws: CommandError("--speed must be a positive number of metres per second, not -1")) {
            try HostCommand.parse("location route run.gpx --speed -1")
        }
        #expect(throws: CommandError("a location authorization is always, whenInUse or denied, not sometimes")) {
            try HostCommand.parse("authorize Runner location sometimes")
        }
        #expect(throws: CommandError("authorize sets location or notifications authorization: authorize APP location always|whenInUse|denied | authorize APP notifications granted|denied")) {
            try HostCommand.parse("authorize Runner camera always")
        }
        #expect(throws: CommandError("usage: voip-push APP FILE.json")) { try HostCommand.parse("voip-push Phone") }
    }

    @Test func sceneCommandsParse() throws {
        #expect(try HostCommand.parse("open Notes --new-scene") == .openNewScene("Notes"))
        #expect(try HostCommand.parse("close-scene Notes 2") == .closeScene("Notes", session: "2"))
        #expect(try HostCommand.parse("discard-scene Notes 2") == .discardScene("Notes", session: "2"))
        #expect(try HostCommand.parse("scenes") == .scenes(json: false))
        #expect(try HostCommand.parse("scenes --json") == .scenes(json: true))
        #expect(throws: CommandError("usage: open APP [--new-scene]")) { try HostCommand.parse("open Notes --new") }
        #expect(throws: CommandError("usage: close-scene APP SCENE")) { try HostCommand.parse("close-scene Notes") }
        #expect(throws: CommandError("usage: scenes [--json]")) { try HostCommand.parse("scenes Notes") }
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
