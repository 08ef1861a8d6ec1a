import Foundation
import Testing

/// Continuous background modes against real app processes: audio and a VoIP call keep an app
/// running in the background only while it does that work, only with the mode declared; the
/// interruptions, 0xbaadca11, 0xbad22222 and `ps`. The Probe's ContinuousProbes.swift lists its
/// behaviours.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ContinuousModeTests {
    func app(_ scratch: Scratch, _ name: String, modes: [String], behavior: [String: Any]) throws -> URL {
        try scratch.bundle(name, behavior: behavior, changes: ["UIBackgroundModes": modes])
    }

    func events(_ host: HostSession, _ name: String, _ names: Set<String>) -> [String] {
        host.allEvents.filter { $0.name == name && names.contains($0.event) }.map { "\($0.event) \($0.detail ?? "")" }
    }

    func payload(_ scratch: Scratch, _ text: String) throws -> String {
        let url = scratch.url.appendingPathComponent("voip-\(UUID().uuidString.prefix(6)).json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func keptRunningBy(_ host: HostSession, _ name: String, occurrence: Int) throws -> [String]? {
        host.send("ps")
        let status = try host.waitFor("ps of \(name) #\(occurrence)", occurrence: occurrence) { $0.event == "ps" && $0.name == name }
        return status.fields["keptRunningBy"] as? [String]
    }

    // MARK: Audio

    @Test func playingAudioKeepsTheAppRunningInTheBackgroundUntilItStops() throws {
        let scratch = try Scratch()
        let player = try app(scratch, "Player", modes: ["audio"], behavior: ["playIn": "didBecomeActive", "stopAudioAfter": 1.5])
        let host = try HostSession([player], scratch: scratch)
        try host.waitFor("Player", "didBecomeActive")
        let playing = try host.waitFor("Player", "audio")
        #expect(playing.detail == "playing")
        host.send("home")
        try host.waitFor("Player", "snapshot")
        #expect(try keptRunningBy(host, "Player", occurrence: 1) == ["audio"])
        #expect(!host.allEvents.contains { $0.name == "Player" && $0.event == "suspended" }, "held while it plays")
        let stopped = try host.waitFor("Player", "audio", occurrence: 2)
        #expect(stopped.detail == "stopped")
        try host.waitFor("Player", "suspended")
        #expect(events(host, "Player", ["didEnterBackground", "snapshot", "audio", "suspended"]).suffix(4) == [
            "didEnterBackground ", "snapshot Probe", "audio stopped", "suspended ",
        ])
        #expect(scratch.recorded("Player").contains("stopping background"), "it ran in the background until it stopped")
        #expect(try keptRunningBy(host, "Player", occurrence: 2) == [])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// `--continuous-hold-limit`: a player that never stops is suspended once it has been held
    /// that long in the background, with a line saying why.
    @Test func theContinuousHoldLimitSuspendsAPlayerThatNeverStops() throws {
        let scratch = try Scratch()
        let player = try app(scratch, "Looper", modes: ["audio"], behavior: ["playIn": "didBecomeActive"])
        let host = try HostSession([player], scratch: scratch, arguments: ["--continuous-hold-limit", "0.5"])
        try host.waitFor("Looper", "audio")
        host.send("home")
        try host.waitFor("Looper", "snapshot")
        let ended = try host.waitFor("Looper", "audio", occurrence: 2)
        #expect(ended.detail == "audio no longer keeps the app running: it held it 0.5 s in the background (--continuous-hold-limit)")
        try host.waitFor("Looper", "suspended")
        #expect(!host.allEvents.contains { $0.name == "Looper" && $0.event == "terminated" })
    }

    @Test func theReportSaysWhichModeKeptTheAppRunningAtItsEnd() throws {
        let scratch = try Scratch()
        let player = try app(scratch, "Player", modes: ["audio"], behavior: ["playIn": "didBecomeActive"])
        let host = try HostSession([player], scratch: scratch)
        try host.waitFor("Player", "audio")
        host.send("home")
        try host.waitFor("Player", "snapshot")
        host.send("terminate Player")
        let end = try host.waitFor("Player", "terminated")
        let report = try #require(end.report)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let usage = try #require(json["usage"] as? [String: Any])
        #expect(usage["keptRunningBy"] as? [String] == ["audio"])
    }

    @Test func withoutTheModeOrWithoutPlaybackAudioKeepsNothingRunning() throws {
        let scratch = try Scratch()
        let undeclared = try app(scratch, "Undeclared", modes: [], behavior: ["playIn": "didBecomeActive"])
        let ambient = try app(scratch, "Ambient", modes: ["audio"], behavior: ["playIn": "didBecomeActive", "audioCategory": "ambient"])
        let host = try HostSession([undeclared, ambient], scratch: scratch)
        let playing = try host.waitFor("Undeclared", "audio")
        #expect(playing.detail == "playing (no audio in UIBackgroundModes: it does not keep the app running in the background)")
        host.send("home")
        try host.waitFor("Undeclared", "suspended")
        #expect(scratch.recorded("Undeclared").contains("play true"))

        host.send("open Ambient")
        try host.waitFor("Ambient", "didBecomeActive")
        host.send("home")
        try host.waitFor("Ambient", "suspended")
        #expect(!host.allEvents.contains { $0.name == "Ambient" && $0.event == "audio" }, "an ambient session does not play for the host")
    }

    @Test func interruptionsReachTheAppAndACallInterruptsItsAudio() throws {
        let scratch = try Scratch()
        let player = try app(scratch, "Player", modes: ["audio"], behavior: ["playIn": "didBecomeActive", "resumeAfterInterruption": true])
        let host = try HostSession([player], scratch: scratch)
        try host.waitFor("Player", "audio")

        host.send("audio-interrupt Player")
        try host.waitFor("Player", "audio", occurrence: 3)  // playing, interruption began, stopped
        host.send("audio-resume Player")
        try host.waitFor("Player", "audio", occurrence: 5)  // interruption ended, playing
        host.send("interrupt Player 0.3")
        try host.waitFor("Player", "didBecomeActive", occurrence: 2)
        try host.waitFor("Player", "audio", occurrence: 9)
        #expect(events(host, "Player", ["audio"]) == [
            "audio playing", "audio interruption began (audio-interrupt)", "audio stopped", "audio interruption ended (audio-resume)",
            "audio playing", "audio interruption began (a call (interrupt))", "audio stopped", "audio interruption ended (the call ended)",
            "audio playing",
        ])
        // The call's interruption begins as it comes, before applicationWillResignActive, and
        // ends as it ends, before applicationDidBecomeActive.
        #expect(scratch.recorded("Player").filter { $0.hasPrefix("audioInterruption") } == [
            "audioInterruption began active main=true playing=false", "audioInterruption ended active main=true playing=false",
            "audioInterruption began active main=true playing=false", "audioInterruption ended inactive main=true playing=false",
        ])

        // In the background an interruption stops the audio that held the app: it is suspended.
        host.send("home")
        try host.waitFor("Player", "snapshot")
        host.send("audio-interrupt Player")
        try host.waitFor("Player", "suspended")
        host.send("audio-resume Player")
        try host.waitForStandardError(containing: "apphost: stdin: Player is suspended: its audio stopped when it was, so there is no interruption to end")
        host.send("audio-interrupt Player")
        try host.waitForStandardError(containing: "apphost: stdin: Player is suspended: a suspended app has no audio to interrupt")
    }

    @Test func audioCommandsRefuseWhatCannotBeInterrupted() throws {
        let scratch = try Scratch()
        let quiet = try app(scratch, "Quiet", modes: ["audio"], behavior: [:])
        let host = try HostSession([quiet], scratch: scratch)
        try host.waitFor("Quiet", "didBecomeActive")
        host.send("audio-interrupt Quiet")
        try host.waitForStandardError(
            containing: "apphost: stdin: Quiet has no active audio session (AVAudioSession.setActive(true)): there is nothing to interrupt")
        host.send("audio-resume Quiet")
        try host.waitForStandardError(containing: "apphost: stdin: Quiet's audio is not interrupted (audio-interrupt first)")
    }

    // MARK: VoIP

    @Test func aVoIPPushLaunchesTheAppAndItsCallKeepsItRunningUntilItEnds() throws {
        let scratch = try Scratch()
        let phone = try app(scratch, "Phone", modes: ["voip"], behavior: ["voip": "report", "endCallAfter": 1.5])
        let host = try HostSession([try scratch.bundle("Front"), phone], scratch: scratch)
        try host.waitFor("Front", "didBecomeActive")
        host.send("voip-push Phone \(try payload(scratch, #"{"caller": "Alice"}"#))")
        let announced = try host.waitFor("Phone", "voipPush")
        #expect(announced.detail?.hasSuffix("launching it into the background (launch reason voipPush)") == true)
        let call = try host.waitFor("Phone", "call")
        #expect(call.detail?.hasPrefix("incoming call ") == true)
        try host.waitFor("Phone", "snapshot")
        #expect(try keptRunningBy(host, "Phone", occurrence: 1) == ["voip"])
        try host.waitFor("Phone", "call", occurrence: 2)
        try host.waitFor("Phone", "suspended")
        let recorded = scratch.recorded("Phone")
        #expect(recorded.first == "launch reason=voipPush remaining=max")
        #expect(recorded.contains("voipPush Alice background main=true"))
        #expect(recorded.contains("call reported error=none"))
        // The call is reported inside the callback, whose event comes when it returns.
        #expect(events(host, "Phone", ["didReceiveIncomingPush", "call", "suspended"]).map { $0.split(separator: " ").first.map(String.init) ?? "" } == [
            "call", "didReceiveIncomingPush", "call", "suspended",
        ])
    }

    @Test func aVoIPPushWhoseCallbackReportsNoCallIsEndedWith0xbaadca11() throws {
        let scratch = try Scratch()
        let phone = try app(scratch, "Phone", modes: ["voip"], behavior: ["voip": "none"])
        let host = try HostSession([phone], scratch: scratch)
        try host.waitFor("Phone", "didBecomeActive")
        host.send("home")
        try host.waitFor("Phone", "suspended")
        host.send("voip-push Phone \(try payload(scratch, #"{"caller": "Bob"}"#))")
        let end = try host.waitFor("Phone", "terminated")
        #expect(end.code == "0xbaadca11")
        #expect(end.namespace == "RUNNINGBOARD")
        #expect(end.kind == "voip-call-not-reported")
        #expect(end.reason == "pushRegistry(_:didReceiveIncomingPushWith:for:completion:) returned without reporting an incoming call to CallKit (CXProvider.reportNewIncomingCall)")
        #expect(scratch.recorded("Phone").contains("voipPush Bob background main=true"))
        host.closeInput()
        #expect(try host.waitForExit() == 4, "a background rule ended an app")
    }

    @Test func aVoIPAppResumedTooOftenIsEndedWith0xbad22222() throws {
        let scratch = try Scratch()
        let phone = try app(scratch, "Phone", modes: ["voip"], behavior: ["voip": "report", "endCallAfter": 0.05])
        let host = try HostSession([phone], scratch: scratch, arguments: ["--voip-resume-limit", "2", "--voip-resume-window", "60"])
        try host.waitFor("Phone", "didBecomeActive")
        host.send("home")
        try host.waitFor("Phone", "suspended")
        let file = try payload(scratch, #"{"caller": "Carol"}"#)
        for resumption in 1...2 {
            host.send("voip-push Phone \(file)")
            try host.waitFor("Phone", "suspended", occurrence: resumption + 1)
        }
        host.send("voip-push Phone \(file)")
        let end = try host.waitFor("Phone", "terminated")
        #expect(end.code == "0xbad22222")
        #expect(end.kind == "voip-resumed-too-often")
        #expect(end.reason == "resumed by VoIP pushes 3 times within 60.0 s; the policy allows 2")
        #expect(scratch.recorded("Phone").filter { $0.hasPrefix("voipPush") }.count == 2, "the third push was not delivered")
    }

    @Test func voipPushesAreRefusedToAnAppWithoutTheMode() throws {
        let scratch = try Scratch()
        let plain = try app(scratch, "Plain", modes: [], behavior: ["voip": "report"])
        let host = try HostSession([plain], scratch: scratch)
        try host.waitFor("Plain", "didBecomeActive")
        host.send("voip-push Plain \(try payload(scratch, #"{"caller": "Dan"}"#))")
        try host.waitForStandardError(
            containing: "apphost: stdin: Plain has no voip in Info.plist UIBackgroundModes: iOS delivers VoIP pushes only to apps that declare it")
        host.send("voip-push Plain \(try payload(scratch, "[1, 2]"))")
        try host.waitForStandardError(containing: "Plain has no voip")
        #expect(!host.allEvents.contains { $0.event == "didReceiveIncomingPush" })
    }

    // MARK: Location

    func locations(_ scratch: Scratch, _ name: String) -> [String] {
        scratch.recorded(name).filter { $0.hasPrefix("location ") && $0.contains(",") }.map { $0.replacingOccurrences(of: " main=true", with: "") }
    }

    /// As on iOS, where it raises NSInternalInconsistencyException: setting
    /// allowsBackgroundLocationUpdates without the location mode ends the app, and its report says why.
    @Test func allowingBackgroundUpdatesWithoutTheModeEndsTheApp() throws {
        let scratch = try Scratch()
        let careless = try app(scratch, "Careless", modes: [], behavior: ["location": ["request": "always", "background": true]])
        let host = try HostSession([careless], scratch: scratch)
        let end = try host.waitFor("Careless", "terminated")
        #expect(end.kind == "crash")
        #expect((end.fields["fatalError"] as? String)?.contains("NSInternalInconsistencyException: allowsBackgroundLocationUpdates was set to true, but the app does not declare location in its Info.plist UIBackgroundModes") == true, "\(end)")
    }

    @Test func locationUpdatesReachTheForegroundAndTheBackgroundOnlyWithTheMode() throws {
        let scratch = try Scratch()
        let runner = try app(scratch, "Runner", modes: ["location"], behavior: ["location": ["request": "always", "background": true, "stopAfter": 3]])
        let walker = try app(scratch, "Walker", modes: [], behavior: ["location": ["request": "whenInUse"]])
        let host = try HostSession([runner, walker], scratch: scratch)
        try host.waitFor("Runner", "didBecomeActive")
        let asked = try host.waitFor("location request") { $0.name == "Runner" && $0.event == "location" && $0.detail?.hasPrefix("asked") == true }
        #expect(asked.detail == "asked for always authorization; it is notDetermined (answer with authorize Runner location always|whenInUse|denied)")
        host.send("location set 48.0,2.0")
        host.send("authorize Runner location always")
        try host.waitFor("first delivery") { $0.name == "Runner" && $0.detail == "delivered 48.000000,2.000000" }
        host.send("home")
        try host.waitFor("Runner", "snapshot")
        #expect(try keptRunningBy(host, "Runner", occurrence: 1) == ["location"])
        host.send("location set 48.001,2.0")
        host.send("location set 48.002,2.0")  // the third update: Runner stops updating
        try host.waitFor("Runner", "suspended")
        #expect(locations(scratch, "Runner") == [
            "location 48.000000,2.000000 active", "location 48.001000,2.000000 background", "location 48.002000,2.000000 background",
        ])
        #expect(scratch.recorded("Runner").contains("location stopping"))
        #expect(scratch.recorded("Runner").contains("authorization 3"), "locationManagerDidChangeAuthorization: authorizedAlways")

        // Without the mode, updates stop once the app leaves the foreground, and it is suspended.
        host.send("authorize Walker location whenInUse")
        host.send("open Walker")
        try host.waitFor("Walker", "didBecomeActive")
        host.send("location set 48.003,2.0")
        try host.waitFor("Walker delivery") { $0.name == "Walker" && $0.detail == "delivered 48.003000,2.000000" }
        host.send("home")
        try host.waitFor("Walker", "suspended")
        host.send("location set 48.004,2.0")
        host.send("ps")
        try host.waitFor("ps of Walker") { $0.event == "ps" && $0.name == "Walker" }
        #expect(locations(scratch, "Walker") == ["location 48.003000,2.000000 active"])
        #expect(locations(scratch, "Runner").count == 3, "a suspended app gets nothing")
        // The host decides while it handles `location set`, before it answers ps.
        #expect(!host.allEvents.contains { $0.event == "location" && $0.detail == "delivered 48.004000,2.000000" }, "nothing was sent")
    }

    @Test func deniedAuthorizationFailsWithCLErrorDenied() throws {
        let scratch = try Scratch()
        let runner = try app(scratch, "Runner", modes: ["location"], behavior: ["location": ["request": "whenInUse"]])
        let first = try HostSession([try scratch.bundle("Front"), runner], scratch: scratch)
        try first.waitFor("Front", "didBecomeActive")
        first.send("authorize Runner location denied")
        first.closeInput()
        _ = try first.waitForExit()
        #expect(FileManager.default.fileExists(atPath: scratch.stateDirectory.appendingPathComponent("location-authorization.json").path))

        // The authorization is kept by the host: the next host's app starts denied.
        let host = try HostSession([runner], scratch: scratch)
        try host.waitFor("Runner", "didBecomeActive")
        host.send("location set 48.0,2.0")
        host.send("ps")
        // The error reaches the delegate on the app's main thread; no event follows it.
        try scratch.waitForRecorded("Runner", "locationError denied")
        try host.waitFor("ps of Runner") { $0.event == "ps" && $0.name == "Runner" }
        #expect(scratch.recorded("Runner").contains("location started 2"), "authorizationStatus is denied from launch")
        #expect(!host.allEvents.contains { $0.name == "Runner" && $0.event == "location" && $0.detail?.hasPrefix("delivered") == true }, "nothing was sent")
        #expect(locations(scratch, "Runner").isEmpty)
    }

    @Test func badLocationInputIsOneLineAndChangesNothing() throws {
        let scratch = try Scratch()
        let notGPX = scratch.url.appendingPathComponent("notes.gpx")
        try Data("just text".utf8).write(to: notGPX)
        let host = try HostSession([try app(scratch, "Runner", modes: ["location"], behavior: [:])], scratch: scratch)
        try host.waitFor("Runner", "didBecomeActive")
        host.send("location route \(notGPX.path)")
        try host.waitForStandardError(containing: "apphost: stdin: \(notGPX.path): not a GPX file: no <gpx> element")
        host.send("location route \(scratch.url.path)/missing.gpx")
        try host.waitForStandardError(containing: "apphost: stdin: cannot read \(scratch.url.path)/missing.gpx")
        host.send("location set 91,0")
        try host.waitForStandardError(containing: "apphost: stdin: latitude must be within -90…90 and longitude within -180…180 degrees; got 91.0,0.0")
        host.send("ps")
        try host.waitFor("ps of Runner") { $0.event == "ps" && $0.name == "Runner" }
        #expect(!host.allEvents.contains { $0.event == "location" && $0.name == nil }, "the device's position never changed")
    }

    @Test func aRouteReplaysItsPositionsInOrder() throws {
        let scratch = try Scratch()
        let gpx = scratch.url.appendingPathComponent("run.gpx")
        try Data("""
            <?xml version="1.0"?>
            <gpx version="1.1" creator="test"><trk><trkseg>
              <trkpt lat="48.000" lon="2.0"/><trkpt lat="48.001" lon="2.0"/><trkpt lat="48.002" lon="2.0"/><trkpt lat="48.003" lon="2.0"/>
            </trkseg></trk></gpx>
            """.utf8).write(to: gpx)
        let runner = try app(scratch, "Runner", modes: ["location"], behavior: ["location": ["request": "always", "background": true]])
        let host = try HostSession([runner], scratch: scratch, arguments: ["--location-update-interval", "0.1"])
        try host.waitFor("Runner", "didBecomeActive")
        host.send("authorize Runner location always")
        host.send("home")
        try host.waitFor("Runner", "snapshot")
        host.send("location route \(gpx.path) --speed 500")
        let started = try host.waitFor("route start") { $0.event == "location" && $0.detail?.hasPrefix("replaying run.gpx") == true }
        #expect(started.detail == "replaying run.gpx: 4 points over 0.7 s")
        try host.waitFor("route end") { $0.event == "location" && $0.detail == "run.gpx finished at 48.003000,2.000000" }
        // The host has sent the last point; the app records it when it has read it.
        try waitUntil("Runner records the route's last point") { locations(scratch, "Runner").last?.hasPrefix("location 48.003000,") == true }
        let latitudes = locations(scratch, "Runner").compactMap { Double($0.dropFirst("location ".count).prefix { $0 != "," }) }
        #expect(latitudes.count >= 4, "one update per interval over the route")
        #expect(latitudes.first == 48.0 && latitudes.last == 48.003)
        #expect(latitudes == latitudes.sorted(), "in the route's order")
        #expect(locations(scratch, "Runner").allSatisfy { $0.hasSuffix(" background") })
    }

    @Test func aSignificantChangeWakesOrRelaunchesTheAppButNotAfterAForceQuit() throws {
        let scratch = try Scratch()
        let tracker = try app(scratch, "Tracker", modes: ["location"], behavior: ["location": ["request": "always", "significant": true, "updating": false]])
        let host = try HostSession([tracker], scratch: scratch)
        try host.waitFor("Tracker", "didBecomeActive")
        host.send("authorize Tracker location always")
        host.send("location set 48.0,2.0")
        host.send("home")
        try host.waitFor("Tracker", "suspended")
        host.send("location set 48.002,2.0")  // 222 m: not significant
        host.send("location set 48.01,2.0")  // 1.1 km: significant
        try host.waitFor("Tracker", "didUpdateLocations")
        try host.waitFor("Tracker", "suspended", occurrence: 2)
        // The first position reached it running (no significant position yet), the second woke it.
        #expect(locations(scratch, "Tracker") == ["location 48.000000,2.000000 active", "location 48.010000,2.000000 background"])

        // Ended by the system (not the user): the next significant change relaunches it.
        host.send("memory-pressure")
        try host.waitFor("Tracker", "terminated")
        host.send("location set 48.02,2.0")
        let relaunch = try host.waitFor("Tracker", "launching", occurrence: 2)
        #expect(relaunch.detail == "location")
        try host.waitFor("Tracker", "didUpdateLocations", occurrence: 2)
        try host.waitFor("Tracker", "suspended", occurrence: 3)
        #expect(scratch.recorded("Tracker").contains("launch reason=location remaining=max"))
        #expect(locations(scratch, "Tracker").last == "location 48.020000,2.000000 background")

        // Force quit by the user: it is not relaunched.
        host.send("terminate Tracker")
        try host.waitFor("Tracker", "terminated", occurrence: 2)
        host.send("location set 48.03,2.0")
        host.send("ps")
        try host.waitFor("ps of Tracker") { $0.event == "ps" && $0.name == "Tracker" }
        #expect(host.allEvents.filter { $0.name == "Tracker" && $0.event == "launching" }.count == 2)
    }
}
