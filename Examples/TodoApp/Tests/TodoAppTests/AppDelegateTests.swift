import AppHostKit
import Foundation
import Testing
@testable import TodoApp

/// The delegate driven detached, in this process: fast, and with the app's own objects at hand.
/// Serialized, as detached tests of an app that uses Application.shared outside its callbacks
/// must be (DetachedApplication's documentation says why).
@MainActor
@Suite(.serialized)
struct AppDelegateTests {
    /// The app's own Info.plist: its identifier, background modes and task identifiers count.
    let infoPlist = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/TodoApp/Info.plist")

    @Test func launchShowsTheListAndRegistersTheSync() throws {
        let app = try DetachedApplication<AppDelegate>(infoPlist: infoPlist)
        #expect(app.launch())
        #expect(app.state == .active)
        #expect(app.snapshot == "Todo: 2 of 2 to do")
        #expect(app.registeredTaskIdentifiers == [AppDelegate.syncTask])
        #expect(app.application.bundleIdentifier == "com.example.todo")
    }

    @Test func goingToTheBackgroundSavesUnderABackgroundTaskAndAsksForASync() async throws {
        let app = try DetachedApplication<AppDelegate>(infoPlist: infoPlist)
        app.launch()
        app.delegate.add("Water the plants")
        app.enterBackground()
        #expect(app.openBackgroundTasks == ["Save todos"])
        try await app.waitForBackgroundTasks()
        #expect(app.delegate.saved?.items.map(\.title) == ["Buy milk", "Write tests", "Water the plants"])
        #expect(app.pendingTaskRequests.map(\.identifier) == [AppDelegate.syncTask])
        #expect(app.warnings.isEmpty)
    }

    @Test func whenTheBackgroundTimeRunsOutItSavesAtOnceAndEndsItsTask() throws {
        let app = try DetachedApplication<AppDelegate>(infoPlist: infoPlist)
        app.launch()
        app.delegate.saveDuration = 60
        app.delegate.add("Book flights")
        app.enterBackground()
        app.expireBackgroundTime()
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(app.delegate.saved?.items.last?.title == "Book flights")
    }

    @Test func theSyncTaskMergesTheSharedListAndCompletes() async throws {
        let app = try DetachedApplication<AppDelegate>(infoPlist: infoPlist)
        app.launch()
        app.enterBackground()
        #expect(try await app.runTask(AppDelegate.syncTask))
        #expect(app.delegate.list.items.map(\.title).last == "Review the shared list")
        #expect(app.snapshot == "Todo: 3 of 3 to do")
        try await app.waitForBackgroundTasks()
    }

    @Test func aRelaunchReadsWhatWasSaved() throws {
        let container = FileManager.default.temporaryDirectory.appendingPathComponent("todo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: container) }
        do {
            let first = try DetachedApplication<AppDelegate>(infoPlist: infoPlist, containerURL: container)
            first.launch()
            first.delegate.add("Pay rent")
            first.terminate()
        }
        let second = try DetachedApplication<AppDelegate>(infoPlist: infoPlist, containerURL: container)
        second.launch()
        #expect(second.snapshot == "Todo: 3 of 3 to do")
    }
}
