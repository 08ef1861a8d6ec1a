import Foundation

/// One line of the command language that `apphost launch` reads from `--script FILE` and then
/// from standard input, and `apphost ctl` sends. README.md lists the commands; `settling` says
/// which apps each waits for.
package enum HostCommand: Sendable, Equatable {
    /// Send the foreground app to the background.
    case home
    /// Bring an app to the foreground, launching it if needed.
    case open(String)
    /// Bring an app that supports several scenes to the foreground in a new scene.
    case openNewScene(String)
    /// Disconnect one of an app's scenes (its session stays), or discard its session.
    case closeScene(String, session: String)
    case discardScene(String, session: String)
    /// List the scene sessions of the apps that adopt scenes.
    case scenes(json: Bool)
    /// Interrupt the foreground app (an alert, a call) for some seconds, or until open/home.
    case interrupt(String, Duration?)
    /// Open the app switcher over the foreground app, until open/home.
    case switcher
    /// Launch an app into the background, or resume a suspended one there, for no event.
    case wake(String)
    /// Terminate an app: `applicationWillTerminate` if it runs (an active app first resigns
    /// active, as through the app switcher), nothing if it is suspended.
    case terminate(String)
    /// Send `applicationDidReceiveMemoryWarning` to one app, or to every running app.
    case memoryWarning(String?)
    /// Simulate memory running short: warn running apps, then end apps (suspended ones first)
    /// until all together use at most this many bytes; without it, end every suspended app.
    case memoryPressure(UInt64?)
    /// Simulate storage running short: purge the caches and tmp of apps that are not running,
    /// ending suspended apps first (0xbaddd15c); running apps are left alone.
    case storagePressure
    /// Deliver `application(_:performFetchWithCompletionHandler:)` now.
    case fetch(String)
    /// Run a registered BGTaskScheduler task now, due or not.
    case runTask(String, identifier: String)
    /// End background work now: one running task, or every task and background-time grant.
    case expire(String, identifier: String?)
    /// Deliver a background remote notification read from a JSON file.
    case push(String, file: String)
    /// Deliver a PushKit VoIP push read from a JSON file.
    case voipPush(String, file: String)
    /// Interrupt the app's audio session, or end the interruption.
    case audioInterrupt(String)
    case audioResume(String)
    /// Set the device's position, replay a GPX route, or clear the position.
    case locationSet(Coordinate)
    case locationRoute(file: String, speed: Double?)
    case locationClear
    /// Set an app's location authorization.
    case authorize(String, LocationAuthorization)
    /// Set an app's notification authorization.
    case authorizeNotifications(String, NotificationAuthorization)
    /// List the pending and delivered user notifications.
    case notifications
    /// Tap an app's delivered notification: open the app, which hears `didReceive`.
    case tapNotification(String, identifier: String, action: String? = nil, text: String? = nil)
    /// Set the simulated power source.
    case power(PowerState)
    /// Set the simulated network.
    case network(NetworkState)
    /// Move the scheduler's clock on.
    case advance(Duration)
    /// Put the scheduler's clock back on real time (`advance reset`).
    case resetClock
    /// List pending BGTaskScheduler requests.
    case tasks
    /// List the background URL session transfers.
    case transfers
    /// Pause the script.
    case sleep(Duration)
    /// Wait until an app reaches a state; fail after the timeout.
    case wait(String, AppState, timeout: Duration)
    /// List the apps.
    case ps
    /// Terminate every app and exit.
    case quit
    /// Print the commands, one line each.
    case help

    /// Every command's usage and what it does, in one line each: what `help` prints, and the
    /// names an unknown command is matched against.
    package static let summaries: [(usage: String, does: String)] = [
        ("home", "send the foreground app to the background"),
        ("open APP [--new-scene]", "bring APP to the foreground (its last scene), launching it if needed; --new-scene: in a new scene"),
        ("close-scene APP SCENE", "disconnect APP's scene SCENE (sceneDidDisconnect; the session is kept)"),
        ("discard-scene APP SCENE", "discard APP's scene session SCENE (application(_:didDiscardSceneSessions:))"),
        ("scenes [--json]", "list the scene sessions of the apps that adopt scenes, with their states"),
        ("interrupt APP [SECONDS]", "an alert or a call: resign active, then become active after SECONDS (or at open/home)"),
        ("switcher", "open the app switcher: the foreground app resigns active until open or home"),
        ("wake APP", "launch APP into the background, or resume it there, for no event"),
        ("terminate APP", "terminate APP (applicationWillTerminate if it runs; an active app resigns active first, as in the app switcher)"),
        ("memory-warning [APP]", "applicationDidReceiveMemoryWarning to APP, or to every running app"),
        ("memory-pressure [MIB]", "memory runs short: warn, then end apps until all fit in MIB"),
        ("storage-pressure", "storage runs short: purge the caches and tmp of apps not running"),
        ("fetch APP", "a background fetch now"),
        ("run-task APP IDENTIFIER", "run the BGTaskScheduler task now, due or not"),
        ("expire APP [IDENTIFIER]", "end background work now: one running task, or all of APP's"),
        ("push APP FILE.json", "deliver the background notification in FILE.json"),
        ("voip-push APP FILE.json", "deliver the VoIP push in FILE.json; APP must report a call"),
        ("audio-interrupt APP", "interrupt APP's audio session (interruption began)"),
        ("audio-resume APP", "end the interruption of APP's audio session (interruption ended)"),
        ("location set LAT,LON | route FILE.gpx [--speed M/S] | clear", "move the simulated device, replay a route, or clear it"),
        ("authorize APP location always|whenInUse|denied | notifications granted|denied",
         "set APP's location or notification authorization (kept by the host; answers a request that waits)"),
        ("notifications", "list the pending and delivered user notifications: app, identifier, title, due, state, presentation"),
        ("tap-notification APP IDENTIFIER [ACTION] [--text TEXT]",
         "tap APP's delivered notification: open APP, didReceive once active; ACTION: an action of its category (--text: the rest of the line, for text input) or dismiss"),
        ("power plugged|battery", "set the simulated power source"),
        ("network online|offline", "set the simulated network"),
        ("advance SECONDS", "move the scheduler's clock on"),
        ("tasks", "list the pending BGTaskScheduler requests"),
        ("transfers", "list the background URL session transfers: app, session, URL, bytes, state, what each waits for"),
        ("sleep SECONDS", "pause the script"),
        ("wait APP STATE [TIMEOUT]", "wait until APP is inactive, active, background, suspended or terminated"),
        ("ps", "list the apps and what each uses"),
        ("help", "print these commands"),
        ("quit", "terminate every app and exit"),
    ]

    /// `help`'s lines: each command's usage in a column, then what it does.
    package static var helpLines: [String] {
        let width = summaries.map(\.usage.count).max() ?? 0
        return summaries.map { $0.usage.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.does }
    }

    /// "unknown command hom; did you mean home?", or the list of commands when none is near.
    package static func unknownCommandMessage(_ verb: String) -> String {
        let names = summaries.map { String($0.usage.prefix { $0 != " " }) }
        if let nearest = NearestName.suggestion(for: verb, among: names) {
            return "unknown command \(verb); did you mean \(nearest)? (help lists the commands)"
        }
        return "unknown command \(verb); commands: \(names.joined(separator: ", "))"
    }

    /// `wait` gives up after this long unless told otherwise.
    package static let defaultWaitTimeout: Duration = .seconds(30)

    /// Parses one line; nil for a blank line or a `#` comment.
    package static func parse(_ line: String) throws(CommandError) -> HostCommand? {
        let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let verb = words.first, !verb.hasPrefix("#") else { return nil }
        let arguments = Array(words.dropFirst())

        func count(_ range: ClosedRange<Int>, _ usage: String) throws(CommandError) {
            guard range.contains(arguments.count) else { throw CommandError("usage: \(usage)") }
        }
        func seconds(_ text: String, _ what: String) throws(CommandError) -> Duration {
            guard let value = Double(text), value >= 0, value.isFinite else {
                throw CommandError("\(what) must be a number of seconds, not \(text)")
            }
            return .seconds(double: value)
        }

        switch verb {
        case "home":
            try count(0...0, "home")
            return .home
        case "open":
            try count(1...2, "open APP [--new-scene]")
            guard arguments.count == 2 else { return .open(arguments[0]) }
            guard arguments[1] == "--new-scene" else { throw CommandError("usage: open APP [--new-scene]") }
            return .openNewScene(arguments[0])
        case "close-scene":
            try count(2...2, "close-scene APP SCENE")
            return .closeScene(arguments[0], session: arguments[1])
        case "discard-scene":
            try count(2...2, "discard-scene APP SCENE")
            return .discardScene(arguments[0], session: arguments[1])
        case "scenes":
            try count(0...1, "scenes [--json]")
            guard arguments.isEmpty || arguments[0] == "--json" else { throw CommandError("usage: scenes [--json]") }
            return .scenes(json: !arguments.isEmpty)
        case "interrupt":
            try count(1...2, "interrupt APP [SECONDS]")
            return .interrupt(arguments[0], try arguments.count == 2 ? seconds(arguments[1], "SECONDS") : nil)
        case "switcher":
            try count(0...0, "switcher")
            return .switcher
        case "wake":
            try count(1...1, "wake APP")
            return .wake(arguments[0])
        case "terminate":
            try count(1...1, "terminate APP")
            return .terminate(arguments[0])
        case "memory-warning":
            try count(0...1, "memory-warning [APP]")
            return .memoryWarning(arguments.first)
        case "memory-pressure":
            try count(0...1, "memory-pressure [MIB]")
            guard let text = arguments.first else { return .memoryPressure(nil) }
            guard let mebibytes = Double(text), mebibytes >= 0, mebibytes.isFinite else {
                throw CommandError("MIB must be a number of MiB the apps must fit in, not \(text)")
            }
            return .memoryPressure(UInt64(mebibytes * 1_048_576))
        case "storage-pressure":
            try count(0...0, "storage-pressure")
            return .storagePressure
        case "fetch":
            try count(1...1, "fetch APP")
            return .fetch(arguments[0])
        case "run-task":
            try count(2...2, "run-task APP IDENTIFIER")
            return .runTask(arguments[0], identifier: arguments[1])
        case "expire":
            try count(1...2, "expire APP [IDENTIFIER]")
            return .expire(arguments[0], identifier: arguments.count == 2 ? arguments[1] : nil)
        case "push":
            try count(2...2, "push APP FILE.json")
            return .push(arguments[0], file: arguments[1])
        case "voip-push":
            try count(2...2, "voip-push APP FILE.json")
            return .voipPush(arguments[0], file: arguments[1])
        case "audio-interrupt":
            try count(1...1, "audio-interrupt APP")
            return .audioInterrupt(arguments[0])
        case "audio-resume":
            try count(1...1, "audio-resume APP")
            return .audioResume(arguments[0])
        case "location":
            let usage = "location set LAT,LON | location route FILE.gpx [--speed M/S] | location clear"
            switch arguments.first {
            case "set":
                try count(2...2, usage)
                switch Coordinate.parse(arguments[1]) {
                case .success(let coordinate): return .locationSet(coordinate)
                case .failure(let error): throw CommandError(error.description)
                }
            case "route":
                guard arguments.count == 2 || (arguments.count == 4 && arguments[2] == "--speed") else { throw CommandError("usage: \(usage)") }
                guard arguments.count == 4 else { return .locationRoute(file: arguments[1], speed: nil) }
                guard let speed = Double(arguments[3]), speed > 0, speed.isFinite else {
                    throw CommandError("--speed must be a positive number of metres per second, not \(arguments[3])")
                }
                return .locationRoute(file: arguments[1], speed: speed)
            case "clear":
                try count(1...1, usage)
                return .locationClear
            default:
                throw CommandError("usage: \(usage)")
            }
        case "authorize":
            try count(3...3, "authorize APP location always|whenInUse|denied | authorize APP notifications granted|denied")
            if arguments[1] == "notifications" {
                guard let authorization = NotificationAuthorization(rawValue: arguments[2]) else {
                    throw CommandError("a notification authorization is granted or denied, not \(arguments[2])")
                }
                return .authorizeNotifications(arguments[0], authorization)
            }
            guard arguments[1] == "location" else {
                throw CommandError("authorize sets location or notifications authorization: authorize APP location always|whenInUse|denied | authorize APP notifications granted|denied")
            }
            guard let authorization = LocationAuthorization(rawValue: arguments[2]) else {
                throw CommandError("a location authorization is always, whenInUse or denied, not \(arguments[2])")
            }
            return .authorize(arguments[0], authorization)
        case "power":
            try count(1...1, "power plugged|battery")
            guard let state = PowerState(rawValue: arguments[0]) else { throw CommandError("power must be plugged or battery, not \(arguments[0])") }
            return .power(state)
        case "network":
            try count(1...1, "network online|offline")
            guard let state = NetworkState(rawValue: arguments[0]) else { throw CommandError("network must be online or offline, not \(arguments[0])") }
            return .network(state)
        case "advance":
            try count(1...1, "advance SECONDS|reset")
            if arguments[0] == "reset" { return .resetClock }
            return .advance(try seconds(arguments[0], "SECONDS"))
        case "tasks":
            try count(0...0, "tasks")
            return .tasks
        case "notifications":
            try count(0...0, "notifications")
            return .notifications
        case "tap-notification":
            let usage = "tap-notification APP IDENTIFIER [ACTION] [--text TEXT]"
            var rest = arguments
            var text: String?
            // The text is the rest of the line (words joined by one space), as typed in a reply.
            if let flag = rest.firstIndex(of: "--text") {
                guard flag + 1 < rest.count else { throw CommandError("usage: \(usage)") }
                text = rest[(flag + 1)...].joined(separator: " ")
                rest.removeSubrange(flag...)
            }
            guard (2...3).contains(rest.count) else { throw CommandError("usage: \(usage)") }
            return .tapNotification(rest[0], identifier: rest[1], action: rest.count == 3 ? rest[2] : nil, text: text)
        case "transfers":
            try count(0...0, "transfers")
            return .transfers
        case "sleep":
            try count(1...1, "sleep SECONDS")
            return .sleep(try seconds(arguments[0], "SECONDS"))
        case "wait":
            try count(2...3, "wait APP STATE [TIMEOUT]")
            guard let state = AppState(rawValue: arguments[1]), state != .notRunning, state != .launching else {
                throw CommandError("STATE must be one of inactive, active, background, suspended, terminated; not \(arguments[1])")
            }
            let timeout = try arguments.count == 3 ? seconds(arguments[2], "TIMEOUT") : defaultWaitTimeout
            return .wait(arguments[0], state, timeout: timeout)
        case "ps":
            try count(0...0, "ps")
            return .ps
        case "quit", "exit":
            try count(0...0, "quit")
            return .quit
        case "help":
            try count(0...0, "help")
            return .help
        default:
            throw CommandError(unknownCommandMessage(verb))
        }
    }
}

/// A command line that cannot be parsed, or a command that cannot be carried out.
package struct CommandError: Error, CustomStringConvertible, Equatable {
    package var description: String
    package init(_ description: String) { self.description = description }
}
