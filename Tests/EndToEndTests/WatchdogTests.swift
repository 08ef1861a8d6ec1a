import Foundation
import Testing

/// Watchdogs: a callback that overruns its budget ends the app with 0x8badf00d and a report.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct WatchdogTests {
    @Test func blockingInDidEnterBackgroundIsKilledWith8badf00d() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Stuck", behavior: ["blockIn": "didEnterBackground"])], scratch: scratch,
            arguments: ["--did-enter-background-timeout", "0.5"])
        try host.waitFor("Stuck", "didBecomeActive")
        host.send("home")
        let end = try host.waitFor("Stuck", "terminated")
        #expect(end.code == "0x8badf00d")
        #expect(end.namespace == "FRONTBOARD")
        #expect(end.kind == "watchdog")
        #expect(end.reason == "did not return from applicationDidEnterBackground(_:) within 0.5 s")
        let report = try Report(end)
        #expect(report["code"] as? String == "0x8badf00d")
        #expect(report["state"] as? String == "background", "the app was in the background inside didEnterBackground")
        #expect(report["signal"] as? String == "SIGKILL")
        #expect((report["lastEvents"] as? [[String: Any]])?.last?["event"] as? String == "willResignActive")
        #expect(!processExists(end.pid!))
        // The host keeps running: it still answers commands.
        host.send("open Stuck")
        try host.waitFor("Stuck", "didBecomeActive", occurrence: 2)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func aLaunchThatTakesTooLongIsKilledWith8badf00d() throws {
        let scratch = try Scratch()
        let other = try scratch.bundle("Fine")
        let host = try HostSession(
            [other, try scratch.bundle("Slow", behavior: ["blockIn": "didFinishLaunching"])], scratch: scratch,
            arguments: ["--launch-timeout", "1"])
        try host.waitFor("Fine", "didBecomeActive")
        host.send("open Slow")
        let end = try host.waitFor("Slow", "terminated")
        #expect(end.code == "0x8badf00d")
        #expect(end.reason == "did not finish launching within 1.0 s: application(_:didFinishLaunchingWithOptions:) had not returned")
        let spawned = try host.waitFor("Slow", "launching")
        let elapsed = end.time!.timeIntervalSince(spawned.time!)
        // The budget starts when the launch is decided; the launching event is stamped once the
        // process is spawned, which takes some milliseconds more on a loaded machine.
        #expect(elapsed >= 0.9 && elapsed < 3.0, "the launch budget runs from spawn: \(elapsed) s")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func blockingInWillTerminateIsKilledWith8badf00d() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Clingy", behavior: ["blockIn": "willTerminate"])], scratch: scratch,
            arguments: ["--will-terminate-timeout", "0.5"])
        try host.waitFor("Clingy", "didBecomeActive")
        host.send("terminate Clingy")
        let end = try host.waitFor("Clingy", "terminated")
        #expect(end.code == "0x8badf00d")
        #expect(end.reason == "did not return from applicationWillTerminate(_:) within 0.5 s")
        #expect(scratch.callbacks("Clingy").last == "willTerminate inactive", "after the app switcher")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }

    @Test func anyOtherCallbackHasTheCallbackBudget() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Warned", behavior: ["blockIn": "didReceiveMemoryWarning"])], scratch: scratch,
            arguments: ["--callback-timeout", "0.5"])
        try host.waitFor("Warned", "didBecomeActive")
        host.send("memory-warning Warned")
        let end = try host.waitFor("Warned", "terminated")
        #expect(end.code == "0x8badf00d")
        #expect(end.reason == "did not return from applicationDidReceiveMemoryWarning(_:) within 0.5 s")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.watchdog)
    }
}
