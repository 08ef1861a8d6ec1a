import Foundation
public import AppHostRuntime

// The command language (docs/commands.md, "Running apps"), one method per command. APP is a bundle's
// CFBundleName or identifier. Each waits, as the command does, for the apps it concerns to
// settle first, and throws `commandFailed` with the host's words if the command fails.

extension TestHost {
    /// `home`: the foreground app goes to the background (sequence 2).
    public func home() async throws { try await send("home") }

    /// `open APP`: brings `app` to the foreground, launching it if needed (sequences 1, 3).
    public func open(_ app: String) async throws { try await send("open \(app)") }

    /// `open APP --new-scene`: brings `app`, which supports multiple scenes, to the foreground
    /// in a new scene session (docs/lifecycle.md, "Scenes").
    public func openNewScene(_ app: String) async throws { try await send("open \(app) --new-scene") }

    /// `close-scene APP SCENE`: disconnects the scene of session `session` (kept).
    public func closeScene(_ app: String, _ session: String) async throws { try await send("close-scene \(app) \(session)") }

    /// `discard-scene APP SCENE`: discards session `session` (`didDiscardSceneSessions`).
    public func discardScene(_ app: String, _ session: String) async throws { try await send("discard-scene \(app) \(session)") }

    /// `scenes --json`: one JSON object per scene session (`name`, `session`, `state`, `front`, `appState`).
    public func scenes() async throws -> [String] { try await send("scenes --json") }

    /// `interrupt APP [SECONDS]`: `applicationWillResignActive`, then after `duration`
    /// `applicationDidBecomeActive`; without one it lasts until `open` or `home` (sequence 4).
    public func interrupt(_ app: String, for duration: Duration? = nil) async throws {
        try await send("interrupt \(app)\(duration.map { " \($0.seconds)" } ?? "")")
    }

    /// `wake APP`: launches `app` into the background, or resumes it there, for no event (5, 6).
    public func wake(_ app: String) async throws { try await send("wake \(app)") }

    /// `fetch APP`: a background fetch now.
    public func fetch(_ app: String) async throws { try await send("fetch \(app)") }

    /// `run-task APP IDENTIFIER`: runs the BGTaskScheduler task now, due or not.
    public func runTask(_ app: String, _ identifier: String) async throws { try await send("run-task \(app) \(identifier)") }

    /// `expire APP [IDENTIFIER]`: ends the running task `identifier` now, or every running task
    /// and the background time of every open background task: expiration handlers run at once
    /// and the grace period starts.
    public func expire(_ app: String, _ identifier: String? = nil) async throws {
        try await send("expire \(app)\(identifier.map { " \($0)" } ?? "")")
    }

    /// `push APP FILE.json`: delivers the notification whose JSON payload is `json`; it must be
    /// a background one (`{"aps": {"content-available": 1}}`).
    public func push(_ app: String, json: String) async throws {
        try await withFile(json, "push") { try await send("push \(app) \($0)") }
    }

    /// `voip-push APP FILE.json`: delivers the PushKit VoIP push whose payload is `json` (a JSON
    /// object); the app must report a call before its callback returns (0xbaadca11).
    public func voipPush(_ app: String, json: String) async throws {
        try await withFile(json, "voip-push") { try await send("voip-push \(app) \($0)") }
    }

    /// `audio-interrupt APP`: interrupts the app's active audio session (type began).
    public func audioInterrupt(_ app: String) async throws { try await send("audio-interrupt \(app)") }

    /// `audio-resume APP`: ends the interruption of the app's audio session (type ended).
    public func audioResume(_ app: String) async throws { try await send("audio-resume \(app)") }

    /// `location set LAT,LON`: puts the simulated device there.
    public func setLocation(latitude: Double, longitude: Double) async throws {
        try await send("location set \(latitude),\(longitude)")
    }

    /// `location route FILE.gpx [--speed M/S]`: replays the GPX document `gpx`.
    public func replayRoute(gpx: String, speed: Double? = nil) async throws {
        try await withFile(gpx, "route", extension: "gpx") { try await send("location route \($0)\(speed.map { " --speed \($0)" } ?? "")") }
    }

    /// `location clear`: forgets the device's position.
    public func clearLocation() async throws { try await send("location clear") }

    /// `authorize APP location always|whenInUse|denied`.
    public func authorizeLocation(_ app: String, _ authorization: LocationAuthorization) async throws {
        try await send("authorize \(app) location \(authorization.rawValue)")
    }

    /// `authorize APP notifications granted|denied`.
    public func authorizeNotifications(_ app: String, _ authorization: NotificationAuthorization) async throws {
        try await send("authorize \(app) notifications \(authorization.rawValue)")
    }

    /// `tap-notification APP IDENTIFIER [ACTION] [--text TEXT]`: opens APP with its delivered
    /// notification; with `action`, answers it with one of its category's actions (`text` for a
    /// text-input one) or `dismiss`.
    public func tapNotification(_ app: String, _ identifier: String, action: String? = nil, text: String? = nil) async throws {
        try await send("tap-notification \(app) \(identifier)" + (action.map { " \($0)" } ?? "") + (text.map { " --text \($0)" } ?? ""))
    }

    /// Runs `body` with the path of a file holding `text`, removed afterwards.
    private func withFile(_ text: String, _ prefix: String, extension: String = "json", _ body: (String) async throws -> Void) async throws {
        let file = directory.appendingPathComponent("\(prefix)-\(UUID().uuidString).\(`extension`)")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await body(file.path)
    }

    /// `push APP FILE.json` with `payload` encoded as JSON.
    public func push(_ app: String, payload: some Encodable) async throws {
        try await push(app, json: String(decoding: try JSONEncoder().encode(payload), as: UTF8.self))
    }

    /// `power plugged|battery`.
    public func power(_ state: PowerState) async throws { try await send("power \(state.rawValue)") }

    /// `network online|offline`.
    public func network(_ state: NetworkState) async throws { try await send("network \(state.rawValue)") }

    /// `advance SECONDS`: moves the scheduler's clock on; requests and fetches due by then run.
    public func advance(_ duration: Duration) async throws { try await send("advance \(duration.seconds)") }

    /// `advance reset`: puts the scheduler's clock back on real time.
    public func resetClock() async throws { try await send("advance reset") }

    /// `tasks`: the scheduler's clock and the pending BGTaskScheduler requests, as JSON lines
    /// (`clock` and `task` events).
    public func tasks() async throws -> [HostEvent] { try decodedLines(await send("tasks")) }

    /// `terminate APP`: `applicationWillTerminate` if it runs; a suspended app is ended with no
    /// callback, a force quit (sequence 7). Returns once it has ended (`wait APP terminated`,
    /// within the policy's willTerminate budget and 10 s): `report(app)` then holds its report.
    public func terminate(_ app: String) async throws {
        try await send("terminate \(app)")
        try await wait(app, .terminated, timeout: policy.willTerminateTimeout + .seconds(10))
    }

    /// `memory-warning [APP]`: `applicationDidReceiveMemoryWarning` to `app`, or to every running app.
    public func memoryWarning(_ app: String? = nil) async throws {
        try await send("memory-warning\(app.map { " \($0)" } ?? "")")
    }

    /// `memory-pressure [MIB]`: memory runs short, on demand (docs/policy.md, "Memory").
    public func memoryPressure(mebibytes: Int? = nil) async throws {
        try await send("memory-pressure\(mebibytes.map { " \($0)" } ?? "")")
    }

    /// `storage-pressure`: storage runs short, on demand; caches and tmp of apps not running are emptied.
    public func storagePressure() async throws { try await send("storage-pressure") }

    /// `ps`: one JSON line per app with its state and figures (docs/events.md, "JSON").
    public func ps() async throws -> [String] { try await send("ps") }

    private func decodedLines(_ lines: [String]) throws -> [HostEvent] {
        let decoder = JSONDecoder()
        return try lines.map { line in
            do { return try decoder.decode(HostEvent.self, from: Data(line.utf8)) } catch {
                throw TestHostError("the host answered a line that is not an event: \(line)", code: .commandFailed)
            }
        }
    }
}
