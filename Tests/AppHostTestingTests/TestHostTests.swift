#if canImport(Glibc)
import Glibc
#endif
@testable import AppHostTesting
import AppHostSystem
import CAppHostShims
import Foundation
import Testing

/// The bundled example apps: scripts/test bundles them into .build/apps before swift test, and
/// builds apphost and apphost-init beside this test binary, where TestHost finds them.
private let apps = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/apps")

private func bundle(_ name: String) throws -> URL {
    try TestHost.bundle(name)
}

/// Whether `pid` is gone: waits on its pidfd (it is not our child) for at most `timeout`.
private func gone(_ pid: Int32, within timeout: Duration) -> Bool {
    let fd = apphost_pidfd_open(pid)
    guard fd >= 0 else { return errno == ESRCH }
    defer { closeIgnoringErrors(fd) }
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, Int32(timeout.components.seconds * 1000)) == 1
}

/// TestHost against the real binary and real apps: one host at a time (2 cores, and each host
/// runs its apps).
@Suite("TestHost drives a real host", .serialized, .timeLimit(.minutes(2)))
struct TestHostTests {
    @Test("continuous modes: a VoIP push and the device's position, through TestHost's methods")
    func continuousModes() async throws {
        let host = try await TestHost.launch([try bundle("Softphone"), try bundle("RunTracker")])
        try await host.wait("Softphone", .active)
        try await host.home()
        try await host.wait("Softphone", .suspended)
        try await host.voipPush("Softphone", json: #"{"caller": "Alice", "seconds": 0.2}"#)
        let call = try await host.nextEvent(.call, of: "Softphone")
        #expect(call.detail?.hasPrefix("incoming call ") == true)
        try await host.wait("Softphone", .suspended)

        try await host.open("RunTracker")
        try await host.authorizeLocation("RunTracker", .always)
        try await host.setLocation(latitude: 48.8462, longitude: 2.3372)
        let delivered = try await host.nextEvent("RunTracker's delivery") {
            $0.event == .location && $0.concerns("RunTracker") && $0.detail?.hasPrefix("delivered") == true
        }
        #expect(delivered.detail == "delivered 48.846200,2.337200")
        _ = await host.shutdown()
    }

    @Test("notifications: Habits asks, and the host's setting answers it")
    func notificationAuthorization() async throws {
        let host = try await TestHost.launch([try bundle("Habits")])
        try await host.open("Habits")
        let asked = try await host.nextEvent("Habits asks") { $0.event == .notification && $0.concerns("Habits") }
        #expect(asked.detail == "asked for authorization; it is notDetermined (answer with authorize Habits notifications granted|denied)")
        try await host.authorizeNotifications("Habits", .granted)
        let set = try await host.nextEvent("the setting") { $0.event == .notification && $0.concerns("Habits") }
        #expect(set.detail == "authorization granted")
        _ = await host.shutdown()
    }

    @Test("scenes: a new scene, one closed and one discarded, through TestHost's methods")
    func scenes() async throws {
        let host = try await TestHost.launch([try bundle("Pages")])
        try await host.wait("Pages", .active)
        try await host.openNewScene("Pages")
        _ = try await host.nextEvent("Pages's new scene") { $0.event == EventName(rawValue: "connectScene") && $0.concerns("Pages") }
        let listed = try await host.scenes().compactMap { line -> String? in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return "\(object["session"] ?? "?") \(object["state"] ?? "?")"
        }
        #expect(listed == ["1 background", "2 foregroundActive"])
        try await host.closeScene("Pages", "1")
        _ = try await host.nextEvent("Pages's closed scene") { $0.event == EventName(rawValue: "disconnectScene") && $0.concerns("Pages") }
        try await host.discardScene("Pages", "1")
        _ = try await host.nextEvent("Pages's discarded session") { $0.event == EventName(rawValue: "discardScene") && $0.concerns("Pages") }
        await #expect(throws: TestHostError.self) { try await host.closeScene("Pages", "1") }
        _ = await host.shutdown()
    }

    @Test("the issue's example: home, wait until suspended, no report; quit writes host-shutdown")
    func homeThenSuspended() async throws {
        let host = try await TestHost.launch([try bundle("Notes")], policy: Policy {
            $0.backgroundTime = .seconds(2)
            $0.expirationWarning = .seconds(1)
        })
        try await host.home()
        try await host.wait("Notes", .suspended)
        #expect(try host.report("Notes") == nil)
        let suspended = try await host.nextEvent(.suspended, of: "Notes")
        #expect(suspended.app == "com.example.notes" && suspended.state == .suspended)
        #expect(host.policy.backgroundTime == .seconds(2))

        let exit = await host.shutdown()
        #expect(exit == HostExit(status: 0, signal: nil))
        let report = try #require(try host.report("Notes"))
        #expect(report.kind == "host-shutdown" && report.namespace == "HOST" && report.code == nil)
        #expect(report.state == .suspended)
        let terminated = try await host.nextEvent(.terminated, of: "com.example.notes")
        #expect(terminated.termination?.kind == .hostShutdown)
        #expect(terminated.report.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
            == host.stateDirectory.appendingPathComponent("reports").path)
    }

    @Test("the policy reaches the host: Uploader's 2 s of background time expire and it is suspended")
    func policyReachesTheHost() async throws {
        try await withTestHost(
            [try bundle("Notes"), try bundle("Uploader")],
            policy: Policy {
                $0.backgroundTime = .seconds(2)
                $0.expirationWarning = .seconds(1)
            }
        ) { host in
            try await host.open("Uploader")
            try await host.home()
            // Uploader's expiration handler ends its task cleanly: suspended, not killed.
            try await host.wait("Uploader", .suspended, timeout: .seconds(10))
            let expiration = try await host.nextEvent(.expiration, of: "Uploader")
            #expect(expiration.state == .background)
            #expect(try host.report("Uploader") == nil)
            let started = try #require(host.recordedEvents.first)
            #expect(started.event == .started && started.host?.stateDirectory == host.stateDirectory.path)
        }
    }

    @Test("events: an asynchronous sequence from the start; nextEvent reads on like a stream")
    func events() async throws {
        try await withTestHost([try bundle("Notes")]) { host in
            try await host.wait("Notes", .active)
            var names: [EventName] = []
            for await event in host.events {
                names.append(event.event)
                if event.event == .didBecomeActive { break }
            }
            #expect(names.first == .started)
            #expect(Array(names.suffix(3)) == [.willFinishLaunching, .didFinishLaunching, .didBecomeActive])
            // The stream: the first didFinishLaunching, then nothing before it again.
            try await host.nextEvent(.didFinishLaunching, of: "Notes")
            try await host.home()
            let next = try await host.nextEvent("Notes's next callback") { $0.elapsed != nil && $0.name == "Notes" }
            #expect(next.event == .didBecomeActive)
            #expect(try await host.nextEvent(.willResignActive, of: "Notes").state == .inactive)
        }
    }

    @Test("a failed command throws with the host's words")
    func failedCommand() async throws {
        try await withTestHost([try bundle("Notes")]) { host in
            let error = try await #require(throws: TestHostError.self) { try await host.send("hom") }
            #expect(error.code == .commandFailed)
            #expect(error.message == "hom failed: unknown command hom; did you mean home? (help lists the commands)")
            let lines = try await host.ps()
            #expect(lines.count == 1 && lines[0].contains(#""event":"ps""#))
        }
    }

    @Test("a wait that times out names the app's state and shows its last events")
    func waitTimesOut() async throws {
        try await withTestHost([try bundle("Notes")]) { host in
            let error = try await #require(throws: TestHostError.self) {
                try await host.wait("Notes", .terminated, timeout: .milliseconds(300))
            }
            #expect(error.code == .timeout)
            #expect(error.message == "Notes did not reach terminated within 0.3 s (it is active)")
            #expect(error.lastEvents.last?.event == .didBecomeActive)
            #expect(error.lastEvents.allSatisfy { $0.name == "Notes" })
            #expect(error.description.contains("Notes[") && error.description.contains("didBecomeActive  → active"))

            let waited = try await #require(throws: TestHostError.self) {
                try await host.nextEvent(.suspended, of: "Notes", timeout: .milliseconds(200))
            }
            #expect(waited.code == .timeout)
            #expect(waited.message == "waited 0.2 seconds for Notes's suspended event")
        }
    }

    @Test("terminate and report: the report is the TerminationReport apphost reports reads")
    func terminateAndReport() async throws {
        try await withTestHost([try bundle("Notes")]) { host in
            try await host.terminate("Notes")
            let report = try #require(try host.report("com.example.notes"))
            #expect(report.kind == "user-terminated" && report.namespace == "USER")
            #expect(report.lastEvents.map(\.event).contains(.willTerminate))
            #expect(try host.reports().count == 1)
            try await host.wait("Notes", .terminated)
        }
    }

    @Test("a host that refuses its input: launch throws with what it said")
    func refusedInput() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-testing-\(UUID().uuidString.prefix(8))")
        let broken = directory.appendingPathComponent("Broken.app")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("<plist><dict></dict></plist>".utf8).write(to: broken.appendingPathComponent("Info.plist"))
        let before = leftovers()
        let error = try await #require(throws: TestHostError.self) { try await TestHost.launch([broken]) }
        #expect(error.code == .launchFailed)
        #expect(error.message.hasPrefix("the host exited with status 1 before it was ready: "))
        #expect(error.message.contains("Broken.app"))
        #expect(leftovers() == before)
    }

    @Test("bundles: found in the package's .build/apps, or a message naming apphost-test")
    func bundles() throws {
        #expect(try TestHost.bundle("Notes") == apps.appendingPathComponent("Notes.app", isDirectory: true))
        let error = try #require(throws: TestHostError.self) { try TestHost.bundle("Nowhere") }
        #expect(error.message == "\(apps.path)/Nowhere.app is missing: run swift package apphost-test in the app's package, which bundles "
            + "its apps into \(apps.path) and runs its tests (or bundle them with swift package bundle-app --all --output \(apps.path))")
    }

    /// Issue 41: `swift test` ran last build's bundle with no word. A bundle whose sources
    /// changed after it was bundled is refused, in one line naming the command that bundles.
    @Test("a bundle older than its sources is refused as stale")
    func staleBundles() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("stale-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let sources = scratch.appendingPathComponent("Sources/Todo"), bundle = scratch.appendingPathComponent("apps/Todo.app")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let source = sources.appendingPathComponent("AppDelegate.swift")
        try Data("// first\n".utf8).write(to: source)
        try Data("<plist><dict/></plist>".utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        let record = try JSONSerialization.data(withJSONObject: ["library": scratch.appendingPathComponent("libTodo.so").path, "sources": [sources.path]])
        try record.write(to: bundle.appendingPathComponent(".apphost-bundled-from.json"))
        #expect(try TestHost.bundle("Todo", in: bundle.deletingLastPathComponent()).path == bundle.path)

        // A second later by the file's clock, whatever the file system's granularity.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(2)], ofItemAtPath: source.path)
        let error = try #require(throws: TestHostError.self) { try TestHost.bundle("Todo", in: bundle.deletingLastPathComponent()) }
        #expect(error.code == .staleBundle)
        #expect(error.message == "Todo.app is stale: \(source.path) changed after it was bundled; run swift package apphost-test, which bundles the app before its tests")
    }

    @Test(
        "a root host's apps cannot enter a private directory: its bundle is copied where they can",
        .enabled(if: getuid() == 0, "only a root host runs apps as users of their own"))
    func bundleInAPrivateDirectory() async throws {
        let hidden = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-testing-private-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: hidden, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: hidden) }
        try FileManager.default.copyItem(at: try bundle("Notes"), to: hidden.appendingPathComponent("Notes.app"))
        try await withTestHost([hidden.appendingPathComponent("Notes.app")]) { host in
            try await host.wait("Notes", .active)
            try await host.terminate("Notes")
            let report = try #require(try host.report("Notes"))
            #expect(report.bundle == host.directory.appendingPathComponent("bundles/Notes.app").path)
        }
    }

    @Test("no apphost where it is looked for: the error says how to build it")
    func missingExecutable() async throws {
        let error = try await #require(throws: TestHostError.self) {
            try await TestHost.launch([try bundle("Notes")], options: .init(executable: URL(fileURLWithPath: "/nonexistent/apphost")))
        }
        #expect(error.code == .executableNotFound)
        #expect(error.message == "TestHost.Options.executable names /nonexistent/apphost, which is not an executable file")
    }

    /// Issue 41: every app package compiled a host for its tests. TestHost builds none: it takes
    /// $APPHOST_EXECUTABLE, else an installed apphost on the PATH (a link to it is followed, so
    /// apphost-init is found beside the file), and otherwise says how to get one.
    @Test("an installed apphost on the PATH is found, and none found says how to get one")
    func executableOnThePath() throws {
        let built = try #require(Executable.apphostsOwnBuild(), "scripts/test builds apphost beside the tests").resolvingSymlinksInPath()
        let bin = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-path-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: bin) }
        try FileManager.default.createSymbolicLink(at: bin.appendingPathComponent("apphost"), withDestinationURL: built)
        #expect(try Executable.locate(nil, environment: ["PATH": "/nonexistent:\(bin.path)"], ownBuild: nil) == built)
        #expect(try Executable.locate(nil, environment: ["PATH": bin.path, "APPHOST_EXECUTABLE": built.path], ownBuild: nil) == built)

        let error = try #require(throws: TestHostError.self) { try Executable.locate(nil, environment: ["PATH": "/nonexistent"], ownBuild: nil) }
        #expect(error.code == .executableNotFound)
        #expect(error.message == "no apphost to run the tests: none is on the PATH (/nonexistent) and APPHOST_EXECUTABLE is not set; install one from "
            + "an apphost checkout with scripts/install [--prefix DIR], or set APPHOST_EXECUTABLE to a checkout's .build/debug/apphost after swift build")
    }

    @Test("a TestHost released while its host runs kills it and removes its directory")
    func releasedWhileRunning() async throws {
        var pid: Int32 = 0
        var appPID: Int32 = 0
        var directory = URL(fileURLWithPath: "/")
        do {
            let host = try await TestHost.launch([try bundle("Notes")])
            appPID = try #require(try await host.nextEvent(.didBecomeActive, of: "Notes").pid)
            pid = host.pid
            directory = host.directory
        }
        #expect(gone(pid, within: .seconds(5)))
        #expect(gone(appPID, within: .seconds(5)))
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    // The test process dying must not leave a host behind: a child process (an exit test) starts
    // a host, says where, and is killed with SIGKILL; the host sees its standard input end, quits
    // as `quit` does (its app gets its host-shutdown report) and exits.
    @Test("a test process killed with SIGKILL leaves no host or app process behind", .timeLimit(.minutes(2)))
    func testProcessKilled() async throws {
        let record = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apphost-testing-crash-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: record) }
        await #expect(processExitsWith: .signal(SIGKILL)) {
            let host = try await TestHost.launch([try bundle("Notes")])
            let app = try await host.nextEvent(.didBecomeActive, of: "Notes")
            let record = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apphost-testing-crash-\(getppid()).txt")
            try "\(host.pid) \(app.pid ?? 0) \(host.directory.path)".write(to: record, atomically: true, encoding: .utf8)
            kill(getpid(), SIGKILL)
        }
        let fields = try String(contentsOf: record, encoding: .utf8).split(separator: " ").map(String.init)
        try #require(fields.count == 3)
        let (hostPID, appPID, directory) = (try #require(Int32(fields[0])), try #require(Int32(fields[1])), URL(fileURLWithPath: fields[2]))
        defer { PrivateDirectory.remove(directory) }
        #expect(gone(hostPID, within: .seconds(30)))
        #expect(gone(appPID, within: .seconds(5)))
        let reports = ReportStore(stateDirectory: directory.appendingPathComponent("state"))
        let report = try #require(try reports.list().last.map(reports.read))
        #expect(report.name == "Notes" && report.kind == "host-shutdown")
    }
}

/// The private directories of hosts now under the temporary directory.
private func leftovers() -> Set<String> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []).filter { $0.hasPrefix("apphost-testhost-") })
}
