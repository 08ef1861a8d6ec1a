import AppHostProtocol
import Dispatch
import Foundation

// Several scenes for an app that supports them (README.md, "Scenes"): `open APP --new-scene`,
// `close-scene`, `discard-scene` and `scenes`. The host names the sessions and decides what
// happens; the operations reach the app through its life-cycle machine, which delivers each when
// no callback runs (resuming a suspended app into the background for it).

extension Supervisor {
    /// Brings `name` to the foreground in a new scene (`open APP --new-scene`): connected in
    /// place of the scene in the foreground if the app is there, else the one it comes with.
    public func openNewScene(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            guard let manifest = record.bundle.sceneManifest else {
                throw SupervisorError("\(record.bundle.name) does not adopt scenes (its Info.plist has no UIApplicationSceneManifest)", code: .refused)
            }
            guard manifest.supportsMultipleScenes else {
                throw SupervisorError(
                    "\(record.bundle.name) does not support multiple scenes (UIApplicationSupportsMultipleScenes is false); open \(record.bundle.name) brings its scene forward",
                    code: .refused)
            }
            let session = scenes.change(record.bundle.identifier) { $0.add() }
            if let run = record.run, run.machine.isLive, run.machine.isInForeground, run.machine.phase != .launching, run.machine.phase != .starting {
                scenes.change(record.bundle.identifier) { $0.markConnected(session) }
                handle(record, run, .scene(.init(.connectScene, session: session)))
            } else {
                open(record)
            }
        }
    }

    /// Disconnects scene `session` of `name` (`close-scene`): `sceneDidDisconnect`; the session
    /// stays, and `open` or `--new-scene` later reconnect it or another.
    public func closeScene(_ name: String, _ session: String) throws {
        try queue.sync {
            let (record, run) = try sceneTarget(name, session, verb: "close")
            guard let run, scenes[record.bundle.identifier].session(session)?.connected == true else {
                throw SupervisorError("scene \(session) of \(record.bundle.name) is not connected; scenes lists them", code: .wrongState)
            }
            scenes.change(record.bundle.identifier) { $0.disconnect(session) }
            handle(record, run, .scene(.init(.disconnectScene, session: session)))
        }
    }

    /// Discards scene session `session` of `name` (`discard-scene`): its scene is disconnected
    /// and `application(_:didDiscardSceneSessions:)` is called, at once if the app runs.
    public func discardScene(_ name: String, _ session: String) throws {
        try queue.sync {
            let (record, run) = try sceneTarget(name, session, verb: "discard")
            scenes.change(record.bundle.identifier) { $0.discard(session, running: run != nil) }
            if let run { handle(record, run, .scene(.init(.discardScene, session: session))) }
        }
    }

    /// The scene sessions of every app that adopts scenes, with their states (`scenes`).
    public func sceneListing() -> [SceneListing] {
        defer {
            // Answered once what it lists is on the disk (the store's writer, not the loop, waits).
            scenes.flush()
        }
        return queue.sync {
            apps.filter(\.bundle.adoptsScenes).flatMap { record -> [SceneListing] in
                let machine = record.run.map(\.machine)
                let appState = machine.map { $0.isAlive ? $0.state : .notRunning } ?? .notRunning
                let kept = scenes[record.bundle.identifier]
                return kept.sessions.map { session in
                    let state: String
                    if !session.connected || !(machine?.isLive ?? false) {
                        state = "unattached"
                    } else if session.identifier == kept.front {
                        switch appState {
                        case .active: state = "foregroundActive"
                        case .inactive, .launching: state = "foregroundInactive"
                        default: state = "background"
                        }
                    } else {
                        state = "background"
                    }
                    return SceneListing(
                        app: record.bundle.name, bundleIdentifier: record.bundle.identifier, session: session.identifier,
                        state: state, front: session.identifier == kept.front, appState: appState)
                }
            }
        }
    }

    /// The app and its run for a scene command on `session`, or one line saying why not: the app
    /// adopts scenes, has the session, and the session is not the one in the foreground.
    private func sceneTarget(_ name: String, _ session: String, verb: String) throws -> (AppRecord, AppRun?) {
        let record = try app(named: name)
        guard record.bundle.adoptsScenes else {
            throw SupervisorError("\(record.bundle.name) does not adopt scenes (its Info.plist has no UIApplicationSceneManifest)", code: .refused)
        }
        let kept = scenes[record.bundle.identifier]
        guard kept.session(session) != nil else {
            let known = kept.sessions.map(\.identifier)
            throw SupervisorError(
                "\(record.bundle.name) has no scene session \(session); \(known.isEmpty ? "it has none" : "its sessions: \(known.joined(separator: ", "))")",
                code: .wrongState)
        }
        let run = record.run.flatMap { $0.machine.isLive ? $0 : nil }
        if let run, run.machine.isInForeground, kept.front == session {
            throw SupervisorError(
                "scene \(session) is \(record.bundle.name)'s scene in the foreground; send the app home first (home) to \(verb) it",
                code: .wrongState)
        }
        return (record, run)
    }
}

// MARK: Sessions kept across hosts

extension Supervisor {
    /// At most this many sessions in one report, and this many bytes of each JSON object in it.
    static let maximumReportedSessions = 64
    static let maximumRestorationBytes = 16 * 1024

    /// The app's report of its sessions' restoration data, checked, kept and saved; or why it
    /// breaks the protocol.
    func receiveSceneSessions(_ sessions: [WireSceneSession], _ record: AppRecord) -> String? {
        guard record.bundle.adoptsScenes else { return "it reported scene sessions, but it does not adopt scenes" }
        guard sessions.count <= Self.maximumReportedSessions else {
            return "it reported \(sessions.count) scene sessions; at most \(Self.maximumReportedSessions) are kept"
        }
        for session in sessions {
            let sizes = [session.userInfo, session.activityUserInfo].map { $0?.utf8.count ?? 0 }
            let names = [session.configuration, session.activityType].map { $0?.utf8.count ?? 0 }
            guard sizes.allSatisfy({ $0 <= Self.maximumRestorationBytes }), names.allSatisfy({ $0 <= 256 }) else {
                return "it reported scene session \(session.identifier.cut(to: 64).debugDescription) with more than the "
                    + "\(Self.maximumRestorationBytes) bytes of userInfo or 256 bytes of a name that are kept"
            }
        }
        return scenes.change(record.bundle.identifier) { $0.restore(sessions) }
    }

}
