import AppHostRuntime
import AppHostSystem
import Foundation
import Synchronization

/// Prints events and command output, whole lines at a time: on standard output and standard
/// error, or into a control connection's reply (`apphost ctl`).
struct EventPrinter: Sendable {
    let json: Bool
    private let output: @Sendable (String) -> Void
    private let errorOutput: @Sendable (String) -> Void

    /// On standard output and standard error. `outputGone` runs once when standard output can
    /// no longer be written (its reader went away: `apphost launch | head`).
    /// Standard output goes through `OutputQueue`: a reader that does not keep up loses lines
    /// (counted), never the host's time.
    init(json: Bool, outputGone: @escaping @Sendable () -> Void = {}) {
        OutputQueue.standardOutput.whenGone(outputGone)
        self.init(json: json, output: { line in
            OutputQueue.standardOutput.write(line)
        }) {
            writeStandardError($0 + "\n")
        }
    }

    init(json: Bool, output: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void) {
        self.json = json
        self.output = output
        errorOutput = error
    }

    func print(_ event: HostEvent) {
        write(json ? event.jsonLine : event.humanLine)
    }

    func write(_ line: String) {
        output(line)
    }

    func error(_ line: String) {
        errorOutput("apphost: \(line)")
    }
}

/// Carries out the command language (HostCommand) against a supervisor.
struct CommandSession {
    enum Outcome {
        case next
        case quit
        case failed
    }

    let supervisor: Supervisor
    let printer: EventPrinter
    /// Whether what a trigger did is also the command's answer: over the control socket, where
    /// the host's event lines do not reach the one who asked (`apphost ctl advance 3600`).
    var answersWithResults = false

    /// A trigger's result, as the event line the host prints for it, when the command is
    /// answered with it.
    private func answer(_ summary: String, as event: EventName) {
        guard answersWithResults else { return }
        printer.print(HostEvent(time: Date(), event: event, detail: summary))
    }

    func execute(_ line: String, origin: String) async -> Outcome {
        do {
            guard let command = try HostCommand.parse(line) else { return .next }
            try await supervisor.settle(before: command)
            switch command {
            case .home:
                supervisor.home()
            case .open(let app):
                try supervisor.open(app)
            case .openNewScene(let app):
                try supervisor.openNewScene(app)
            case .closeScene(let app, let session):
                try supervisor.closeScene(app, session)
            case .discardScene(let app, let session):
                try supervisor.discardScene(app, session)
            case .scenes(let json):
                printScenes(json: json)
            case .interrupt(let app, let duration):
                try supervisor.interrupt(app, for: duration)
            case .switcher:
                try supervisor.openSwitcher()
            case .wake(let app):
                try supervisor.wake(app)
            case .terminate(let app):
                try supervisor.terminate(app)
                // Over when the command is: the app has ended and its report is written, so a
                // script's or `apphost ctl`'s next step (`apphost reports`) finds it.
                try await supervisor.settle([app])
            case .memoryWarning(let app):
                try supervisor.memoryWarning(app)
            case .memoryPressure(let target):
                supervisor.memoryPressure(target: target)
            // What it did to each app is in its storagePressure events.
            case .storagePressure:
                supervisor.storagePressure()
            // What each trigger did is in the events it publishes (fetch, runTask, expire, push,
            // conditions, advance), in both output modes.
            case .fetch(let app):
                answer(try supervisor.fetch(app), as: .fetch)
            case .runTask(let app, let identifier):
                answer(try supervisor.runTask(app, identifier: identifier), as: .runTask)
            case .expire(let app, let identifier):
                answer(try supervisor.expire(app, identifier: identifier), as: .expire)
            case .push(let app, let file):
                answer(try supervisor.push(app, payload: try read(file), source: file), as: .push)
            case .voipPush(let app, let file):
                answer(try supervisor.voipPush(app, payload: try read(file), source: file), as: .voipPush)
            case .locationSet(let coordinate):
                answer(supervisor.setLocation(coordinate), as: .location)
            case .locationRoute(let file, let speed):
                let route: LocationRoute
                do { route = try LocationRoute(gpx: try read(file), speed: speed) } catch let error as LocationError {
                    throw CommandError("\(file): \(error.description)")
                }
                answer(supervisor.replayRoute(route, name: URL(fileURLWithPath: file).lastPathComponent), as: .location)
            case .locationClear:
                answer(supervisor.clearLocation(), as: .location)
            case .authorize(let app, let authorization):
                answer(try await supervisor.authorizeLocation(app, authorization), as: .location)
            case .authorizeNotifications(let app, let authorization):
                answer(try await supervisor.authorizeNotifications(app, authorization), as: .notification)
            case .notifications:
                printNotifications()
            case .tapNotification(let app, let identifier, let action, let text):
                answer(try supervisor.tapNotification(app, identifier: identifier, action: action, text: text), as: .notification)
            case .audioInterrupt(let app):
                try supervisor.audioInterruption(app, began: true)
            case .audioResume(let app):
                try supervisor.audioInterruption(app, began: false)
            case .power(let state):
                answer(supervisor.setPower(state), as: .conditions)
            case .network(let state):
                answer(supervisor.setNetwork(state), as: .conditions)
            case .advance(let duration):
                answer(supervisor.advance(by: duration), as: .advance)
            case .resetClock:
                answer(supervisor.resetClock(), as: .advance)
            case .tasks:
                printTasks()
            case .transfers:
                printTransfers()
            case .sleep(let duration):
                try? await Task.sleep(for: duration)
            case .wait(let app, let state, let timeout):
                guard try await supervisor.wait(for: app, state: state, timeout: timeout) else {
                    let now = supervisor.status().first { $0.name.lowercased() == app.lowercased() || $0.identifier == app }
                    printer.error("\(origin): \(app) did not reach \(state.rawValue) within \(timeout.seconds) s (it is \(now?.state.rawValue ?? "unknown"))")
                    return .failed
                }
            case .ps:
                printStatus()
            case .help:
                HostCommand.helpLines.forEach(printer.write)
            case .quit:
                return .quit
            }
            return .next
        } catch let error as CommandError {
            printer.error("\(origin): \(error)")
        } catch {
            printer.error("\(origin): \(error)")
        }
        return .failed
    }

    private func printTasks() {
        let requests = supervisor.pendingTaskRequests()
        let clock = supervisor.schedulerClock
        if printer.json {
            printer.write(HostEvent.jsonLine(clock))
            requests.forEach { printer.write(HostEvent.jsonLine($0)) }
            return
        }
        printer.write("scheduler clock: \(clock.description)")
        guard !requests.isEmpty else {
            printer.write("no pending task requests")
            return
        }
        var rows = [["APP", "IDENTIFIER", "KIND", "EARLIEST", "REQUIRES", "WAITING FOR"]]
        for request in requests {
            let requires = [request.requiresExternalPower ? "power" : nil, request.requiresNetworkConnectivity ? "network" : nil].compactMap { $0 }
            rows.append([
                request.app, request.identifier, request.kind,
                request.earliestBeginDate.map { HostEvent.isoFormatter.string(from: $0) } ?? "-",
                requires.isEmpty ? "-" : requires.joined(separator: ","), request.waitingFor ?? "nothing (runs when the app is in the background)",
            ])
        }
        tableLines(rows).forEach(printer.write)
    }

    private func printTransfers() {
        let transfers = supervisor.transferListing()
        if printer.json {
            transfers.forEach { printer.write(HostEvent.jsonLine(TransferListingLine(listing: $0))) }
            return
        }
        guard !transfers.isEmpty else {
            printer.write("no background transfers")
            return
        }
        var rows = [["APP", "SESSION", "TASK", "KIND", "URL", "BYTES", "STATE", "WAITING FOR"]]
        for transfer in transfers {
            rows.append([
                transfer.name, transfer.session, String(transfer.task), transfer.kind + (transfer.discretionary ? " (discretionary)" : ""),
                transfer.url, "\(transfer.bytesDone) of \(transfer.bytesExpected.map(String.init) ?? "?")", transfer.state,
                transfer.waitingFor ?? "-",
            ])
        }
        tableLines(rows).forEach(printer.write)
    }

    private func printNotifications() {
        let listed = supervisor.notificationListing()
        if printer.json {
            listed.forEach { printer.write(HostEvent.jsonLine($0)) }
            return
        }
        guard !listed.isEmpty else {
            printer.write("no pending or delivered notifications")
            return
        }
        var rows = [["APP", "IDENTIFIER", "TITLE", "DUE", "STATE"]]
        for line in listed {
            rows.append([line.name, line.identifier, line.title, HostEvent.isoFormatter.string(from: line.due), line.state + (line.repeats ? " (repeats)" : "")
                + (line.presented.map { " (presented with [\($0.joined(separator: ","))])" } ?? "")])
        }
        tableLines(rows).forEach(printer.write)
    }

    private func printScenes(json: Bool) {
        let scenes = supervisor.sceneListing()
        if json || printer.json {
            scenes.forEach { printer.write(HostEvent.jsonLine($0)) }
            return
        }
        guard !scenes.isEmpty else {
            printer.write("no scene sessions (no app that adopts scenes has run)")
            return
        }
        var rows = [["APP", "SCENE", "STATE", "FRONT", "APP STATE"]]
        for scene in scenes {
            rows.append([scene.app, scene.session, scene.state, scene.front ? "yes" : "-", scene.appState.rawValue])
        }
        tableLines(rows).forEach(printer.write)
    }

    /// A payload file's bytes, or one line saying why not.
    private func read(_ file: String) throws -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CommandError("cannot read \(file): \(error.localizedDescription)")
        }
    }

    /// "-", or "2 (1 running, 1 waiting)".
    private func transferSummary(_ transfers: [TransferListing]) -> String {
        guard !transfers.isEmpty else { return "-" }
        let states = Dictionary(grouping: transfers, by: \.state).map { "\($0.value.count) \($0.key)" }.sorted()
        return "\(transfers.count) (\(states.joined(separator: ", ")))"
    }

    private func printStatus() {
        let apps = supervisor.status()
        if printer.json {
            apps.forEach { printer.write(HostEvent.jsonLine($0)) }
            return
        }
        func seconds(_ duration: Duration) -> String { String(format: "%.2f s", duration.seconds) }
        func mebibytes(_ bytes: UInt64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        var rows = [["NAME", "PID", "STATE", "IN STATE", "CPU FG", "CPU BG", "MEMORY", "PEAK", "STORAGE", "TASKS", "TRANSFERS", "KEPT RUNNING BY", "BG LEFT", "WAKE-UPS", "VIOLATIONS", "SNAPSHOT"]]
        for app in apps {
            rows.append([
                app.name, app.pid.map(String.init) ?? "-", app.state.rawValue, seconds(app.timeInState),
                seconds(app.cpuForeground), seconds(app.cpuBackground), mebibytes(app.memory), mebibytes(app.peakMemory),
                app.storage.map { "\(mebibytes($0.bytes)) \($0.limitBytes.map { "of \(mebibytes($0))" } ?? "(no limit)")" } ?? "-",
                String(app.openBackgroundTasks), transferSummary(app.transfers), app.keptRunningBy.isEmpty ? "-" : app.keptRunningBy.map(\.rawValue).joined(separator: ","),
                app.backgroundTimeRemaining.map(seconds) ?? "-",
                String(app.backgroundWakeups), String(app.violations),
                app.snapshot.map { $0.replacingOccurrences(of: "\n", with: " ⏎ ").debugDescription } ?? "-",
            ])
        }
        tableLines(rows).forEach(printer.write)
    }
}

/// A line of `transfers --json`: `event` "transferListing" and the listing's fields.
struct TransferListingLine: Encodable {
    var listing: TransferListing

    private enum CodingKeys: String, CodingKey { case event }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("transferListing", forKey: .event)
        try listing.encode(to: encoder)
    }
}
