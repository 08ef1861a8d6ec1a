import AppHostKit
import Foundation
import Synchronization
import Testing

/// What a delegate written for Apple's SDK passes to `BGTaskScheduler.register`: a closure that
/// is not `@Sendable`, capturing the delegate's own state (Apple's background-tasks sample calls
/// its delegate's methods from it). It compiles in Swift 6 mode and runs as Apple's does.
final class RefreshLog {
    private let lock = NSLock()
    private var refreshed: [String] = []

    func refresh(_ task: BGTask) {
        lock.withLock { refreshed.append(task.identifier) }
        task.setTaskCompleted(success: true)
    }

    var identifiers: [String] { lock.withLock { refreshed } }
}

@MainActor
final class PortedDelegate: ApplicationDelegate {
    let log = RefreshLog()

    init() {}

    func application(_ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?) -> Bool {
        // Not @Sendable: RefreshLog is not Sendable, and the closure captures it.
        let log = self.log
        let handler: (BGTask) -> Void = { task in log.refresh(task) }
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "test.ported", using: nil, launchHandler: handler)
        return true
    }
}

@MainActor
struct PortedHandlerTests {
    @Test("a launch handler that is not @Sendable runs the task", .timeLimit(.minutes(1)))
    func aNonSendableLaunchHandlerRuns() async throws {
        let app = DetachedApplication<PortedDelegate>(infoDictionary: [
            "CFBundleIdentifier": "test.ported", "UIBackgroundModes": ["fetch"], "BGTaskSchedulerPermittedIdentifiers": ["test.ported"],
        ])
        app.launch()
        try BGTaskScheduler.shared.submit(BGAppRefreshTaskRequest(identifier: "test.ported"))
        #expect(try await app.runTask("test.ported"))
        #expect(app.delegate.log.identifiers == ["test.ported"])
    }
}
