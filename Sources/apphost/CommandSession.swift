import AppHostRuntime
import Foundation

/// Prints events and command output on standard output, whole lines at a time.
struct EventPrinter: Sendable {
    let json: Bool

    func print(_ event: HostEvent) {
        write(json ? event.jsonLine : event.humanLine)
    }

    func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func error(_ line: String) {
        FileHandle.standardError.write(Data("apphost: \(line)\n".utf8))
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

    func execute(_ line: String, origin: String) async -> Outcome {
        do {
            guard let command = try HostCommand.parse(line) else { return .next }
            switch command {
            case .home:
                supervisor.home()
            case .open(let app):
                try supervisor.open(app)
            case .interrupt(let app, let duration):
                try supervisor.interrupt(app, for: duration)
            case .wake(let app):
                try supervisor.wake(app)
            case .terminate(let app):
                try supervisor.terminate(app)
            case .memoryWarning(let app):
                try supervisor.memoryWarning(app)
            case .memoryPressure(let target):
                supervisor.memoryPressure(target: target)
            // What each trigger did is in the events it publishes (fetch, runTask, expire, push,
            // conditions, advance), in both output modes.
            case .fetch(let app):
                _ = try supervisor.fetch(app)
            case .runTask(let app, let identifier):
                _ = try supervisor.runTask(app, identifier: identifier)
            case .expire(let app, let identifier):
                _ = try supervisor.expire(app, identifier: identifier)
            case .push(let app, let file):
                let payload: Data
                do { payload = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                    throw CommandError("cannot read \(file): \(error.localizedDescription)")
                }
                _ = try supervisor.push(app, payload: payload, source: file)
            case .power(let state):
                _ = supervisor.setPower(state)
            case .network(let state):
                _ = supervisor.setNetwork(state)
            case .advance(let duration):
                _ = supervisor.advance(by: duration)
            case .tasks:
                printTasks()
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
        if printer.json {
            for request in requests {
                var object: [String: Any] = [
                    "event": "task", "name": request.app, "identifier": request.identifier, "kind": request.kind,
                    "requiresExternalPower": request.requiresExternalPower,
                    "requiresNetworkConnectivity": request.requiresNetworkConnectivity,
                    "time": HostEvent.isoFormatter.string(from: Date()),
                ]
                if let date = request.earliestBeginDate { object["earliestBeginDate"] = HostEvent.isoFormatter.string(from: date) }
                if let waiting = request.waitingFor { object["waitingFor"] = waiting }
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
                printer.write(String(decoding: data, as: UTF8.self))
            }
            return
        }
        guard !requests.isEmpty else {
            printer.write("no pending task requests")
            return
        }
        var lines = [["APP", "IDENTIFIER", "KIND", "EARLIEST", "REQUIRES", "WAITING FOR"]]
        for request in requests {
            let requires = [request.requiresExternalPower ? "power" : nil, request.requiresNetworkConnectivity ? "network" : nil].compactMap { $0 }
            lines.append([
                request.app, request.identifier, request.kind,
                request.earliestBeginDate.map { HostEvent.isoFormatter.string(from: $0) } ?? "-",
                requires.isEmpty ? "-" : requires.joined(separator: ","), request.waitingFor ?? "nothing (runs when the app is in the background)",
            ])
        }
        printTable(lines)
    }

    /// Prints rows in columns as wide as their widest cell.
    private func printTable(_ lines: [[String]]) {
        let widths = (0..<lines[0].count).map { column in lines.map { $0[column].count }.max() ?? 0 }
        for line in lines {
            printer.write(zip(line, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
    }

    private func printStatus() {
        let apps = supervisor.status()
        if printer.json {
            for app in apps {
                var object: [String: Any] = [
                    "event": "ps", "app": app.identifier, "name": app.name, "state": app.state.rawValue,
                    "timeInState": app.timeInState.seconds, "openBackgroundTasks": app.openBackgroundTasks,
                    "cpuForeground": app.cpuForeground.seconds, "cpuBackground": app.cpuBackground.seconds,
                    "violations": app.violations, "time": HostEvent.isoFormatter.string(from: Date()),
                    "memory": Int(app.memory), "peakMemory": Int(app.peakMemory), "backgroundWakeups": app.backgroundWakeups,
                ]
                if let pid = app.pid { object["pid"] = Int(pid) }
                if let left = app.backgroundTimeRemaining { object["backgroundTimeRemaining"] = left.seconds }
                if let snapshot = app.snapshot { object["snapshot"] = snapshot }
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
                printer.write(String(decoding: data, as: UTF8.self))
            }
            return
        }
        func seconds(_ duration: Duration) -> String { String(format: "%.2f s", duration.seconds) }
        func mebibytes(_ bytes: UInt64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        var lines = [["NAME", "PID", "STATE", "IN STATE", "CPU FG", "CPU BG", "MEMORY", "PEAK", "TASKS", "BG LEFT", "WAKE-UPS", "VIOLATIONS", "SNAPSHOT"]]
        for app in apps {
            lines.append([
                app.name, app.pid.map(String.init) ?? "-", app.state.rawValue, seconds(app.timeInState),
                seconds(app.cpuForeground), seconds(app.cpuBackground), mebibytes(app.memory), mebibytes(app.peakMemory),
                String(app.openBackgroundTasks), app.backgroundTimeRemaining.map(seconds) ?? "-",
                String(app.backgroundWakeups), String(app.violations),
                app.snapshot.map { $0.replacingOccurrences(of: "\n", with: " ⏎ ").debugDescription } ?? "-",
            ])
        }
        printTable(lines)
    }
}
