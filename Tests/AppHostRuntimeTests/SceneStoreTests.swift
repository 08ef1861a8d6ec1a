import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// The scene sessions kept across hosts and the scene commands' rules (SceneStore) on their own:
/// which session connects, what may be closed or discarded, what a launch is told after a
/// discard or a force quit, the sessions an app may report.
@Suite struct SceneStoreTests {
    private let files = TemporaryFiles()
    private let identifier = "com.example.journal"

    private func store(_ path: String? = nil) throws -> SceneStore {
        SceneStore(store: StateStore(json: try path ?? files.url("scenes-\(UUID().uuidString).json").path, what: "the scene sessions"))
    }

    /// The app as the host sees it: not running unless changed.
    private func journal(multiple: Bool = true, _ change: (inout SceneStore.App) -> Void = { _ in }) -> SceneStore.App {
        var app = SceneStore.App(
            identifier: identifier, name: "Journal",
            manifest: WireSceneManifest(supportsMultipleScenes: multiple, configurations: [.init(name: "Default", delegateClassName: "Journal.SceneDelegate")]))
        change(&app)
        return app
    }

    /// Running in the foreground, active, past its launch.
    private func inForeground() -> SceneStore.App {
        journal { $0.isLive = true; $0.isInForeground = true; $0.state = .active }
    }

    private func inBackground() -> SceneStore.App {
        journal { $0.isLive = true; $0.state = .background }
    }

    @Test func whatIsKeptIsSavedAndAConnectionIsNot() throws {
        let path = try files.url("scene-sessions.json").path
        let scenes = try store(path)
        #expect(try scenes.openNewScene(journal()) == .open)
        scenes.flush()
        #expect(FileManager.default.fileExists(atPath: path), "a new session is saved")
        try FileManager.default.removeItem(atPath: path)
        #expect(scenes.sceneComingForward(identifier, with: .willEnterForeground) == "1")
        #expect(try scenes.close("1", of: inBackground()) == .operation(.disconnectScene, session: "1"))
        scenes.flush()
        #expect(!FileManager.default.fileExists(atPath: path), "a connection and a disconnection are not")
        #expect(try scenes.openNewScene(inForeground()) == .operation(.connectScene, session: "2"))
        #expect(scenes.sceneComingForward(identifier, with: .didBecomeActive) == "2", "the new scene is in front")
        scenes.flush()
        // The next host finds both, the one last in front last, none connected.
        let again = try store(path)
        #expect(again[identifier].sessions.map(\.identifier) == ["1", "2"])
        #expect(again[identifier].front == "2")
        #expect(again[identifier].sessions.allSatisfy { !$0.connected })
        #expect(again["com.example.other"].sessions.isEmpty)
    }

    @Test func aNewSceneConnectsInPlaceOnlyInAnAppInTheForegroundPastItsLaunch() throws {
        let scenes = try store()
        #expect(try scenes.openNewScene(journal { $0.isLive = true; $0.isInForeground = true; $0.isStarting = true }) == .open, "launching")
        #expect(try scenes.openNewScene(inBackground()) == .open)
        #expect(try scenes.openNewScene(inForeground()) == .operation(.connectScene, session: "3"))
        #expect(scenes[identifier].session("3")?.connected == true)
        #expect(throws: SupervisorError.self) { try scenes.openNewScene(journal(multiple: false)) }
        #expect(throws: SupervisorError.self) { try scenes.openNewScene(journal { $0.manifest = nil }) }
    }

    @Test func onlyTheForegroundCallbacksBringTheFrontSessionForward() throws {
        let scenes = try store()
        #expect(scenes.sceneComingForward(identifier, with: .didEnterBackground) == nil)
        #expect(scenes[identifier].sessions.isEmpty)
        #expect(scenes.sceneComingForward(identifier, with: .willEnterForeground) == "1", "none yet: a new one")
        #expect(scenes[identifier].session("1")?.connected == true)
        scenes.processStarts(identifier)
        #expect(scenes[identifier].session("1")?.connected == false, "a new process has none connected")
    }

    @Test func theSceneInTheForegroundAndAnUnconnectedOneCannotBeClosed() throws {
        let scenes = try store()
        _ = scenes.sceneComingForward(identifier, with: .willEnterForeground)
        #expect(try scenes.openNewScene(inForeground()) == .operation(.connectScene, session: "2"))
        #expect(throws: SupervisorError.self, "the one in front") { try scenes.close("2", of: inForeground()) }
        #expect(throws: SupervisorError.self, "the one in front") { _ = try scenes.discard("2", of: inForeground()) }
        #expect(throws: SupervisorError.self, "no such session") { _ = try scenes.discard("9", of: inBackground()) }
        #expect(throws: SupervisorError.self, "not running: nothing connected") { try scenes.close("1", of: journal()) }
        #expect(try scenes.close("1", of: inForeground()) == .operation(.disconnectScene, session: "1"), "not the one in front")
        #expect(throws: SupervisorError.self, "not connected any more") { try scenes.close("1", of: inForeground()) }
        #expect(try scenes.close("2", of: inBackground()) == .operation(.disconnectScene, session: "2"), "in the background, the front one too")
    }

    @Test func aSessionDiscardedWhileTheAppIsNotRunningIsToldAtItsNextLaunchOnce() throws {
        let scenes = try store()
        _ = try scenes.openNewScene(journal())
        _ = try scenes.openNewScene(journal())
        #expect(try scenes.discard("1", of: inBackground()) == .operation(.discardScene, session: "1"), "running: told at once")
        #expect(try scenes.discard("2", of: journal()) == nil, "not running")
        var discarded = WireSceneSession(identifier: "2")
        discarded.discarded = true
        #expect(scenes.sessionsForLaunch(identifier) == [discarded])
        #expect(scenes.sessionsForLaunch(identifier).isEmpty, "told once")
        // A report of a session it may not know is gone yet is not a violation.
        #expect(scenes.receive([WireSceneSession(identifier: "2")], from: inBackground()) == nil)
    }

    @Test func aForceQuitDiscardsEverySessionAndTheNextLaunchBeginsWithANewOne() throws {
        let scenes = try store()
        _ = try scenes.openNewScene(journal())
        _ = try scenes.openNewScene(journal())
        scenes.forceQuit(identifier)
        #expect(scenes[identifier].sessions.isEmpty)
        let told = scenes.sessionsForLaunch(identifier)
        #expect(told.map(\.identifier) == ["1", "2"])
        #expect(told.allSatisfy { $0.discarded == true })
        #expect(scenes.sceneComingForward(identifier, with: .willEnterForeground) == "3")
    }

    @Test func memoryPressureDisconnectsTheScenesInTheBackgroundOnly() throws {
        let scenes = try store()
        _ = scenes.sceneComingForward(identifier, with: .willEnterForeground)
        #expect(try scenes.openNewScene(inForeground()) == .operation(.connectScene, session: "2"))
        #expect(scenes.disconnectBackgroundScenes(of: inForeground()) == [.operation(.disconnectScene, session: "1")])
        #expect(scenes.disconnectBackgroundScenes(of: inForeground()).isEmpty, "once")
        #expect(scenes.disconnectBackgroundScenes(of: inBackground()) == [.operation(.disconnectScene, session: "2")], "in the background: all")
        #expect(scenes.disconnectBackgroundScenes(of: journal()).isEmpty, "not running")
    }

    @Test func aReportIsCheckedAgainstTheSessionsTheHostMadeAndItsLimits() throws {
        let scenes = try store()
        _ = try scenes.openNewScene(journal())
        #expect(scenes.receive([WireSceneSession(identifier: "1", userInfo: "{\"page\":3}")], from: inBackground()) == nil)
        #expect(scenes.sessionsForLaunch(identifier) == [WireSceneSession(identifier: "1", userInfo: "{\"page\":3}")])
        #expect(scenes.receive([WireSceneSession(identifier: "7")], from: inBackground())?.contains("which the host did not make") == true)
        let large = String(repeating: "x", count: SceneStore.maximumRestorationBytes + 1)
        #expect(scenes.receive([WireSceneSession(identifier: "1", userInfo: large)], from: inBackground())?.contains("bytes of userInfo") == true)
        let many = (0...SceneStore.maximumReportedSessions).map { WireSceneSession(identifier: "\($0)") }
        #expect(scenes.receive(many, from: inBackground()) == "it reported 65 scene sessions; at most 64 are kept")
        #expect(scenes.receive([], from: journal { $0.manifest = nil }) == "it reported scene sessions, but it does not adopt scenes")
    }

    @Test func theListingSaysEachScenesState() throws {
        let scenes = try store()
        _ = scenes.sceneComingForward(identifier, with: .willEnterForeground)
        _ = try scenes.openNewScene(journal())
        let listed = scenes.listing([inForeground(), journal { $0.identifier = "com.example.plain"; $0.manifest = nil }])
        #expect(listed.map(\.session) == ["1", "2"])
        #expect(listed.map(\.state) == ["background", "unattached"], "1 connected but not in front now; 2 never connected")
        _ = scenes.sceneComingForward(identifier, with: .didBecomeActive)
        #expect(scenes.listing([inForeground()]).map(\.state) == ["background", "foregroundActive"])
        #expect(scenes.listing([journal()]).map(\.state) == ["unattached", "unattached"], "not running")
    }
}
