import AppHostTesting
import Foundation
import Testing

/// Todo under a real host: its own process, confined, suspended, with the host's budgets and
/// termination reports. `swift package apphost-test` bundles the app before the tests run; the
/// host is an installed apphost, or the one $APPHOST_EXECUTABLE names (scripts/test's).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HostedTests {
    /// Short budgets, so that expiring background time takes a second, not thirty.
    let policy = Policy {
        $0.backgroundTime = .seconds(3)
        $0.expirationWarning = .seconds(1)
    }

    @Test func itSavesAndIsSuspendedInTheBackground() async throws {
        let host = try await TestHost.launch([try TestHost.bundle("Todo")], policy: policy)
        try await host.home()
        try await host.wait("Todo", .suspended)
        #expect(try host.report("Todo") == nil)
        // Events are read in order, like a stream: the snapshot (taken when
        // applicationDidEnterBackground returns), then the end of the save's background task.
        #expect(try await host.nextEvent(.snapshot, of: "Todo").detail == "Todo: 2 of 2 to do")
        let task = try await host.nextEvent(.backgroundTaskEnded, of: "Todo")
        #expect(task.detail == #"#1 "Save todos""#)
        await host.shutdown()
        #expect(try host.report("Todo")?.kind == "host-shutdown")
    }

    @Test func theSyncRunsInTheBackgroundAndTheAppIsSuspendedAgain() async throws {
        try await withTestHost([try TestHost.bundle("Todo")], policy: policy) { host in
            try await host.home()
            try await host.wait("Todo", .suspended)
            try await host.runTask("Todo", "com.example.todo.sync")
            let completed = try await host.nextEvent(.taskCompleted, of: "Todo")
            #expect(completed.detail == "com.example.todo.sync success")
            try await host.wait("Todo", .suspended)
            #expect(try await host.nextEvent(.snapshot, of: "Todo").detail == "Todo: 3 of 3 to do")
        }
    }

    @Test func forceQuitWhileSuspendedIsReported() async throws {
        try await withTestHost([try TestHost.bundle("Todo")], policy: policy) { host in
            try await host.home()
            try await host.wait("Todo", .suspended)
            try await host.terminate("Todo")
            let report = try #require(try host.report("Todo"))
            #expect(report.kind == "force-quit" && report.namespace == "USER")
            #expect(report.state == .suspended)
            #expect(report.crash == false)
        }
    }
}
