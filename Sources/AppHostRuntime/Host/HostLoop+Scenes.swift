import AppHostProtocol
import Dispatch
import Foundation

// Several scenes for an app that supports them (docs/lifecycle.md, "Scenes"): `open APP --new-scene`,
// `close-scene`, `discard-scene` and `scenes`. The host names the sessions and decides what
// happens; the operations reach the app through its life-cycle machine, which delivers each when
// no callback runs (resuming a suspended app into the background for it).

extension HostLoop {
    /// Brings `name` to the foreground in a new scene (`open APP --new-scene`): connected in
    /// place of the scene in the foreground if the app is there, else the one it comes with.
    func openNewScene(_ name: String) throws {
        try queue.sync {
            let record = try app(named: name)
            perform(try scenes.openNewScene(sceneFacts(record)), record)
        }
    }

    /// Disconnects scene `session` of `name` (`close-scene`): `sceneDidDisconnect`; the session
    /// stays, and `open` or `--new-scene` later reconnect it or another.
    func closeScene(_ name: String, _ session: String) throws {
        try queue.sync {
            let record = try app(named: name)
            perform(try scenes.close(session, of: sceneFacts(record)), record)
        }
    }

    /// Discards scene session `session` of `name` (`discard-scene`): its scene is disconnected
    /// and `application(_:didDiscardSceneSessions:)` is called, at once if the app runs.
    func discardScene(_ name: String, _ session: String) throws {
        try queue.sync {
            let record = try app(named: name)
            if let effect = try scenes.discard(session, of: sceneFacts(record)) { perform(effect, record) }
        }
    }

    /// The scene sessions of every app that adopts scenes, with their states (`scenes`).
    func sceneListing() -> [SceneListing] {
        let (listed, flush) = queue.sync { (scenes.listing(apps.map(sceneFacts)), scenes.flushing) }
        // Answered once what it lists is on the disk (the store's writer, not the loop, waits).
        flush()
        return listed
    }

    /// The app's report of its sessions' restoration data, checked, kept and saved; or why it
    /// breaks the protocol.
    func receiveSceneSessions(_ sessions: [WireSceneSession], _ record: AppRecord) -> String? {
        scenes.receive(sessions, from: sceneFacts(record))
    }

    /// What the scene rules need to know of the app now.
    func sceneFacts(_ record: AppRecord) -> SceneStore.App {
        var facts = SceneStore.App(identifier: record.bundle.identifier, name: record.bundle.name, manifest: record.bundle.sceneManifest)
        if let machine = record.run?.machine {
            facts.isLive = machine.isLive
            facts.isInForeground = machine.isInForeground
            facts.isStarting = machine.isStarting
            facts.state = machine.isAlive ? machine.state : .notRunning
        }
        return facts
    }

    /// Performs a scene effect for the app.
    func perform(_ effect: SceneStore.Effect, _ record: AppRecord) {
        switch effect {
        case .operation(let callback, let session):
            if let run = record.run { handle(record, run, .scene(.init(callback, session: session))) }
        case .open:
            open(record)
        }
    }
}
