import Foundation
import Testing

/// Apps that crash, misbehave on the wire, or cannot be loaded: the host reports each in one
/// clear line and a report, keeps its other apps running, and never hangs.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CrashTests {
    @Test(arguments: [
        ("trap", "SIGNAL", "4", "crashed (SIGILL) in applicationDidBecomeActive(_:)"),
        ("segv", "SIGNAL", "11", "crashed (SIGSEGV) in applicationDidBecomeActive(_:)"),
        ("exit3", "EXIT", "3", "exited with status 3 in applicationDidBecomeActive(_:)"),
    ])
    func aCrashIsReportedAndTheOtherAppsKeepRunning(crash: String, namespace: String, code: String, reason: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Steady"), try scratch.bundle("Crasher", behavior: ["crashIn": "didBecomeActive", "crash": crash])],
            scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        host.send("open Crasher")
        let end = try host.waitFor("Crasher", "terminated")
        #expect(end.kind == (namespace == "EXIT" ? "exit" : "crash"))
        #expect(end.namespace == namespace)
        #expect(end.code == code)
        #expect(end.reason == reason)
        let report = try Report(end)
        #expect(report["crash"] as? Bool == true)
        #expect(report["state"] as? String == "active")
        if namespace == "EXIT" { #expect(report["exitStatus"] as? Int == 3) } else { #expect(report["signal"] != nil) }
        // The figures the host measured (an app that dies in its first callback may die before
        // the host measures it at full size: its footprint is sampled at state changes).
        let usage = try #require(report["usage"] as? [String: Any])
        let peak = try #require(usage["peakMemoryBytes"] as? Int)
        #expect(peak >= (usage["memoryBytes"] as? Int ?? .max))
        // The other app is unaffected.
        host.send("open Steady")
        try host.waitFor("Steady", "didBecomeActive", occurrence: 2)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.crash)
    }

    @Test(arguments: [
        ("garbage", "broke the control protocol: it sent a frame that is not a message (23 bytes: \"this is not JSON at all\")"),
        ("oversize", "broke the control protocol: it sent a frame of 1099511627776 bytes exceeds the 1048576-byte limit"),
    ])
    func garbageOnTheWireEndsTheAppNotTheHost(wire: String, reason: String) throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Steady"), try scratch.bundle("Noisy", behavior: ["wire": wire])], scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        host.send("open Noisy")
        let end = try host.waitFor("Noisy", "terminated")
        #expect(end.kind == "protocol-violation")
        #expect(end.reason == reason)
        _ = try Report(end)
        host.send("open Steady")
        try host.waitFor("Steady", "didBecomeActive", occurrence: 2)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }

    @Test func anAppThatClosesItsControlSocketIsEnded() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Steady"), try scratch.bundle("Mute", behavior: ["closeControlSocket": true])], scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        host.send("open Mute")
        let end = try host.waitFor("Mute", "terminated")
        #expect(end.kind == "protocol-violation")
        #expect(end.reason == "broke the control protocol: it closed its control socket")
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.hostRules)
    }

    /// A launching method that returns false fails the launch, and ends it there: the app,
    /// which runs the launch's callbacks from its configuration without waiting for the host,
    /// does not go on to didFinishLaunching after willFinishLaunching's false.
    @Test(arguments: ["willFinishLaunching", "didFinishLaunching"])
    func aLaunchMethodReturningFalseFailsTheLaunch(method: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("Steady"), try scratch.bundle("Reluctant", behavior: ["\(method)Returns": false])],
            scratch: scratch)
        try host.waitFor("Steady", "didBecomeActive")
        host.send("open Reluctant")
        let end = try host.waitFor("Reluctant", "terminated")
        #expect(end.kind == "launch-failed")
        #expect(end.reason == "application(_:\(method)WithOptions:) returned false")
        // Each written before its method returned, so before the host could have killed the app.
        let ran = method == "willFinishLaunching" ? ["willFinishLaunching inactive"] : ["willFinishLaunching inactive", "didFinishLaunching inactive"]
        #expect(scratch.callbacks("Reluctant") == ran)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.badInput)
    }
}

/// Bad input on the command line: one clear line on standard error and a non-zero exit.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BadInputTests {
    /// Launches `bundle` with a short script and returns the exit status and standard error.
    private func launch(_ bundle: URL, scratch: Scratch) throws -> (status: Int32, error: String) {
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, bundle.path])
        return (result.status, result.error)
    }

    private func expectOneLine(_ error: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = error.split(separator: "\n").filter { !$0.contains("]: ") }  // app output lines aside
        #expect(lines == [Substring("apphost: " + expected)], sourceLocation: sourceLocation)
    }

    @Test func aMissingBundle() throws {
        let scratch = try Scratch()
        let result = try launch(scratch.url.appendingPathComponent("Nowhere.app"), scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(
            result.error,
            "\(scratch.url.path)/Nowhere.app: no such app bundle; build one in the app's package with "
                + "`swift package --allow-writing-to-package-directory bundle-app --product NAME --output DIR`")
    }

    @Test func aMalformedInfoPlist() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Broken")
        try Data("<plist><dict><key>oops".utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("apphost: Broken.app/Info.plist is not a valid property list"))
        #expect(result.error.split(separator: "\n").count == 1)
    }

    /// The hint names the plugin's module (ProbeFixture, from libProbeFixture.so), which the
    /// class name must be qualified by, not the app's name (it suggested `Hello.AppDelegate` for
    /// a class of module HelloExample).
    @Test func aMissingRequiredKey() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Nameless", changes: ["ApplicationDelegateClassName": nil])
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Nameless.app/Info.plist: ApplicationDelegateClassName is missing; name the class that conforms to ApplicationDelegate, e.g. ProbeFixture.AppDelegate")
    }

    /// An Info.plist without CFBundleName: the app is named after its directory, and the host
    /// says so (it is not silent about a name the app did not give).
    @Test func aBundleWithoutANameIsNamedAfterItsDirectoryAndTheHostSaysSo() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Unnamed", changes: ["CFBundleName": nil])], scratch: scratch)
        let warning = try host.waitFor("the warning") { $0.event == "warning" && $0.name == "Unnamed" }
        #expect(warning.detail == "Unnamed.app/Info.plist has no CFBundleName: the app is named Unnamed after its directory")
        try host.waitFor("Unnamed", "didBecomeActive")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aDelegateClassThatDoesNotExist() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Ghost", changes: ["ApplicationDelegateClassName": "ProbeFixture.Nope"])
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Ghost.app cannot launch: Ghost.app/Info.plist: ApplicationDelegateClassName names ProbeFixture.Nope, which does not exist in the plugin; name the class as Module.ClassName, e.g. ProbeFixture.AppDelegate")
    }

    /// The message names the bundle launched, by its directory, even when its CFBundleName
    /// is another app's.
    @Test func aWrongDelegateClassNamesItsOwnBundle() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Ghost", changes: ["CFBundleName": "Notes", "ApplicationDelegateClassName": "ProbeFixture.NotADelegate"])
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Ghost.app cannot launch: Ghost.app/Info.plist: ApplicationDelegateClassName names ProbeFixture.NotADelegate, which does not conform to ApplicationDelegate (or UIKit's UIApplicationDelegate)")
    }

    @Test func aDelegateClassThatDoesNotConform() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Impostor", changes: ["ApplicationDelegateClassName": "ProbeFixture.NotADelegate"])
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Impostor.app cannot launch: Impostor.app/Info.plist: ApplicationDelegateClassName names ProbeFixture.NotADelegate, which does not conform to ApplicationDelegate (or UIKit's UIApplicationDelegate)")
    }

    @Test func aSharedObjectThatIsNotAPlugin() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Library", library: "libNotAPluginFixture.so")
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Library.app cannot launch: Library.app/libNotAPluginFixture.so is not an apphost plugin: it exports no apphost_plugin_record; build it as a .dynamic library product that depends on AppHostKit")
    }

    @Test func aFileThatIsNotASharedObject() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Text", library: "libNotAPluginFixture.so")
        let plugin = bundle.appendingPathComponent("libNotAPluginFixture.so")
        try FileManager.default.removeItem(at: plugin)
        try Data("just text".utf8).write(to: plugin)
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("apphost: Text.app cannot launch: Text.app/libNotAPluginFixture.so cannot be loaded: "))
        #expect(result.error.split(separator: "\n").count == 1)
    }

    /// The message names the Swift to rebuild with (it quoted clang versions only) and the
    /// bundle by its directory (it used CFBundleName, here Foreign, in a bundle named Other.app).
    @Test func aPluginBuiltByAnotherToolchain() throws {
        let scratch = try Scratch()
        let named = try scratch.bundle("Foreign", library: "libForeignPluginFixture.so")
        let bundle = named.deletingLastPathComponent().appendingPathComponent("Other.app")
        try FileManager.default.moveItem(at: named, to: bundle)
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        #expect(result.error.contains(
            "cannot launch: Other.app/libForeignPluginFixture.so was built by another Swift toolchain than this apphost, which Swift 6."))
        #expect(result.error.contains(
            "so rebuild the plugin with Swift 6.") && result.error.contains(" (its compiler: clang version 15.0.0 (https://github.com/swiftlang/llvm-project.git 0000000); this apphost's: clang "))
        #expect(!result.error.contains("foreign plugin code ran"), "no plugin code runs before the check")
    }

    @Test func aPluginOfAnotherSDKABIVersion() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Stale", library: "libOtherABIPluginFixture.so")
        let result = try launch(bundle, scratch: scratch)
        #expect(result.status == 1)
        expectOneLine(result.error, "Stale.app cannot launch: Stale.app/libOtherABIPluginFixture.so was built against AppHostKit ABI version 45, but this apphost speaks version 4; rebuild the plugin against this apphost's AppHostKit")
        #expect(!result.error.contains("other-ABI plugin code ran"))
    }

    @Test func anUnknownCommandInAScriptFailsTheHost() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        try Data("wait Probe active\nfly Probe\n".utf8).write(to: script)
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, try scratch.bundle("Probe").path])
        #expect(result.status == 1)
        #expect(result.error.contains("apphost: \(script.path):2: unknown command fly; commands: home, open, close-scene, discard-scene, scenes, interrupt, switcher, wake, terminate, memory-warning, memory-pressure, storage-pressure, fetch, run-task, expire, push, voip-push, audio-interrupt, audio-resume, location, authorize, notifications, tap-notification, power, network, advance, tasks, transfers, sleep, wait, ps, help, quit"))
    }

    @Test func aWaitThatTimesOutFailsTheHost() throws {
        let scratch = try Scratch()
        let script = scratch.url.appendingPathComponent("script")
        // Active first (a loaded machine may take longer than 0.3 s to launch it), then a wait
        // for a state that never comes.
        try Data("wait Probe active\nwait Probe suspended 0.3\n".utf8).write(to: script)
        let result = try runApphost(["launch", "--state-dir", scratch.stateDirectory.path, "--script", script.path, try scratch.bundle("Probe").path])
        #expect(result.status == 1)
        #expect(result.error.contains("apphost: \(script.path):2: Probe did not reach suspended within 0.3 s (it is active)"))
    }
}
