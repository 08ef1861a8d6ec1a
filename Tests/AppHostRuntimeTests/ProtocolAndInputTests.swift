import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

@Suite struct FramingTests {
    @Test func framesSplitAcrossReadsAndPackedTogetherDecode() throws {
        let first = Framing.frame(Array("{\"a\":1}".utf8))
        let second = Framing.frame(Array("[]".utf8))
        let stream = first + second
        var decoder = FrameDecoder()
        var bodies: [[UInt8]] = []
        for byte in stream {  // the worst case: one byte per read
            decoder.append([byte])
            while let body = try decoder.next() { bodies.append(body) }
        }
        #expect(bodies == [Array("{\"a\":1}".utf8), Array("[]".utf8)])
        #expect(decoder.pendingByteCount == 0)
    }

    @Test func anOversizeLengthIsRefusedBeforeAnyBodyArrives() {
        var decoder = FrameDecoder()
        decoder.append(withUnsafeBytes(of: UInt64(Framing.maximumBodyLength + 1).littleEndian, Array.init))
        #expect(throws: FramingError.oversize(UInt64(Framing.maximumBodyLength + 1))) { try decoder.next() }
    }

    @Test func messagesRoundTrip() throws {
        let messages: [AppMessage] = [
            .hello(protocolVersion: 1, pid: 42), .ready(protocolVersion: 1), .launchFailed(reason: "no"),
            .ack(id: 7, returned: false, snapshot: "text"), .taskBegan(id: 3, name: nil), .taskEnded(id: 3), .warning("w"),
            .sceneSessions([WireSceneSession(identifier: "1", configuration: "Main", userInfo: "{}", activityType: "a.b", activityUserInfo: "{}")]),
        ]
        for message in messages {
            #expect(try WireCoding.decode(AppMessage.self, from: WireCoding.encode(message)) == message)
        }
        for request in [
            HostMessage.callback(WireCallbackRequest(id: 1, callback: .didEnterBackground, state: .background, backgroundTimeRemaining: 30)),
            .withdraw(id: 3),
        ] {
            #expect(try WireCoding.decode(HostMessage.self, from: WireCoding.encode(request)) == request)
        }
    }

    @Test func garbageIsAnErrorNotACrash() {
        #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: Array("not json".utf8)) }
        #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: Array("{\"fly\":{}}".utf8)) }
    }

    /// A callback request and its ack go compact (a tag byte, then fixed fields) unless they
    /// carry what the compact form has no room for; both forms decode to the same message.
    @Test func callbackRequestsAndAcksAreCompactUnlessTheyCarryMore() throws {
        let compact: [HostMessage] = [
            .callback(WireCallbackRequest(id: 1, callback: .didReceiveMemoryWarning, state: .active)),
            .callback(WireCallbackRequest(id: .max, callback: .discardScene, state: .background, stateAfter: .inactive, backgroundTimeRemaining: 29.5)),
        ]
        for message in compact {
            let body = WireCoding.encode(message)
            #expect(body.count == 21 && body.first == 0x01)
            #expect(try WireCoding.decode(HostMessage.self, from: body) == message)
            #expect(try WireCoding.decode(HostMessage.self, from: WireCoding.encode(json: message)) == message)
        }
        var withScene = WireCallbackRequest(id: 2, callback: .didBecomeActive, state: .active)
        withScene.scene = "1"
        let withEvent = WireCallbackRequest(
            id: 3, callback: .performFetch, state: .background, event: WireBackgroundEvent(work: 4, kind: .fetch))
        for message in [HostMessage.callback(withScene), .callback(withEvent)] {
            #expect(WireCoding.encode(message).first == UInt8(ascii: "{"))
            #expect(try WireCoding.decode(HostMessage.self, from: WireCoding.encode(message)) == message)
        }
        for returned in [nil, true, false] as [Bool?] {
            let ack = AppMessage.ack(id: 9, returned: returned, snapshot: nil)
            #expect(WireCoding.encode(ack).count == 10)
            #expect(try WireCoding.decode(AppMessage.self, from: WireCoding.encode(ack)) == ack)
        }
        #expect(WireCoding.encode(AppMessage.ack(id: 9, returned: nil, snapshot: "window")).first == UInt8(ascii: "{"))
        let thenNext = AppMessage.ackThenNext(id: .max - 1)
        #expect(WireCoding.encode(thenNext).count == 9)
        #expect(try WireCoding.decode(AppMessage.self, from: WireCoding.encode(thenNext)) == thenNext)
        let withdraw = HostMessage.withdraw(id: .max - 2)
        #expect(WireCoding.encode(withdraw).count == 9)
        #expect(try WireCoding.decode(HostMessage.self, from: WireCoding.encode(withdraw)) == withdraw)
    }

    /// The launch's own messages: `hello`, `sandboxed` and `ready` compact, and a configuration
    /// tagged, its JSON handed on to the plugin as it came.
    @Test func theLaunchsMessagesAreCompactAndAConfigurationIsTaggedJSON() throws {
        let launch: [(AppMessage, tag: UInt8, length: Int)] = [
            (.hello(protocolVersion: wireProtocolVersion, pid: 2), 0x05, 13),
            (.hello(protocolVersion: wireProtocolVersion, pid: .max), 0x05, 13),
            (.sandboxed(listener: true, landlockABI: 7, uid: 2_000_000_042, seconds: 0.0015), 0x06, 18),
            (.sandboxed(listener: false, landlockABI: 0, uid: .max, seconds: 0), 0x06, 18),
            (.ready(protocolVersion: wireProtocolVersion), 0x03, 9),
        ]
        for (message, tag, length) in launch {
            let body = WireCoding.encode(message)
            #expect(body.count == length && body.first == tag)
            #expect(try WireCoding.decode(AppMessage.self, from: body) == message)
            #expect(try WireCoding.decode(AppMessage.self, from: WireCoding.encode(json: message)) == message)
            for malformed in [Array(body.dropLast()), body + [0]] {
                #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: malformed) }
            }
        }
        var badListener = WireCoding.encode(AppMessage.sandboxed(listener: true, landlockABI: 7, uid: 0, seconds: 0.001))
        badListener[1] = 2
        var negative = badListener
        negative[1] = 0
        withUnsafeBytes(of: (-1.0).bitPattern.littleEndian) { negative.replaceSubrange(10..<18, with: $0) }
        for malformed in [badListener, negative] {
            #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: malformed) }
        }

        var configuration = WireConfiguration(
            bundleIdentifier: "com.example.tagged", bundleName: "Tagged", bundlePath: "/apps/Tagged.app",
            pluginPath: "/apps/Tagged.app/libTagged.so", delegateClassName: "Tagged.AppDelegate", containerPath: "/containers/tagged",
            launchReason: "user")
        configuration.logLevel = "debug"
        let configure = HostMessage.configure(configuration)
        let tagged = WireCoding.encode(configure)
        #expect(tagged.first == 0x04)
        #expect(try WireCoding.decode(HostMessage.self, from: tagged) == configure)
        let bytes = try #require(WireCoding.configurationBytes(in: tagged))
        #expect(try WireConfiguration(compact: bytes) == configuration)
        #expect(WireCoding.configurationBytes(in: WireCoding.encode(json: configure)) == nil)
        // Cut short, it is not a message.
        #expect(throws: (any Error).self) { try WireCoding.decode(HostMessage.self, from: Array(tagged.dropLast(2))) }
        // A host's configuration is not an app's message.
        #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: tagged) }
    }

    /// A compact body is checked as strictly as JSON: its exact length, every enumeration in range.
    @Test func aMalformedCompactBodyIsAnError() {
        let request = WireCoding.encode(HostMessage.callback(WireCallbackRequest(id: 1, callback: .willTerminate, state: .inactive)))
        let ack = WireCoding.encode(AppMessage.ack(id: 1, returned: true, snapshot: nil))
        var badCallback = request
        badCallback[9] = UInt8(WireCallback.allCases.count)
        var badState = request
        badState[10] = 3
        var badFlag = request
        badFlag[12] = 2
        var infinite = request
        infinite[12] = 1
        withUnsafeBytes(of: Double.infinity.bitPattern.littleEndian) { infinite.replaceSubrange(13..<21, with: $0) }
        var badReturned = ack
        badReturned[9] = 2
        let withdraw = WireCoding.encode(HostMessage.withdraw(id: 2))
        for body in [Array(request.dropLast()), request + [0], badCallback, badState, badFlag, infinite, Array(withdraw.dropLast()), withdraw + [0]] {
            #expect(throws: (any Error).self) { try WireCoding.decode(HostMessage.self, from: body) }
        }
        let thenNext = WireCoding.encode(AppMessage.ackThenNext(id: 2))
        for body in [Array(ack.prefix(5)), ack + [0], badReturned, request, Array(thenNext.dropLast()), thenNext + [0]] {
            #expect(throws: (any Error).self) { try WireCoding.decode(AppMessage.self, from: body) }
        }
        // A host's compact frame is not an app's message, nor the reverse.
        #expect(throws: (any Error).self) { try WireCoding.decode(HostMessage.self, from: ack) }
    }
}

@Suite struct PolicyTests {
    private let files = TemporaryFiles()

    private func write(_ text: String) throws -> URL { try files.policy(text) }

    @Test func defaultsAreTheSpecs() {
        let policy = Policy()
        #expect(policy.launchTimeout == .seconds(20))
        #expect(policy.callbackTimeout == .seconds(10))
        #expect(policy.didEnterBackgroundTimeout == .seconds(5))
        #expect(policy.willTerminateTimeout == .seconds(5))
        #expect(policy.backgroundTime == .seconds(30))
        #expect(policy.expirationWarning == .seconds(5))
        #expect(policy.expirationGrace == .seconds(5))
        #expect(policy.maximumBackgroundTasks == 1000)
        #expect(policy.backgroundCPULimit == 80)
        #expect(policy.backgroundCPUWindow == .seconds(60))
        #expect(policy.foregroundMemoryLimit > policy.backgroundMemoryLimit)
        #expect(policy.memoryBudget == nil)
    }

    @Test func resourceKeysAreMiBPercentAndPaths() throws {
        let url = try write(#"""
            {"foregroundMemoryLimit": 128, "memoryBudget": 512.5, "backgroundCPULimit": 50, "backgroundCPUWindow": 2,
             "memoryWarningGrace": 0.5, "sharedResources": ["/dev/video0", "/run/db.sock"]}
            """#)
        let policy = try Policy.load(contentsOf: url)
        #expect(policy.foregroundMemoryLimit == 128 << 20)
        // A foreground limit below the default background one lowers that too.
        #expect(policy.backgroundMemoryLimit == 128 << 20)
        #expect(policy.memoryBudget == 537_395_200)
        #expect(policy.backgroundCPULimit == 50)
        #expect(policy.backgroundCPUWindow == .seconds(2))
        #expect(policy.memoryWarningGrace == .milliseconds(500))
        #expect(policy.sharedResources == ["/dev/video0", "/run/db.sock"])
        #expect { try Policy.load(contentsOf: try write(#"{"sharedResources": ["relative/path"]}"#)) } throws: { error in
            "\(error)".hasSuffix("sharedResources must be an array of absolute paths")
        }
        #expect { try Policy.load(contentsOf: try write(#"{"foregroundMemoryLimit": 64, "backgroundMemoryLimit": 96}"#)) } throws: { error in
            "\(error)" == "backgroundMemoryLimit (96.0 MiB) must not exceed foregroundMemoryLimit (64.0 MiB)"
        }
    }

    @Test func aFileOverridesWhatItNames() throws {
        let url = try write(#"{"backgroundTime": 3, "expirationWarning": 0.5, "maximumBackgroundTasks": 10}"#)
        let policy = try Policy.load(contentsOf: url)
        #expect(policy.backgroundTime == .seconds(3))
        #expect(policy.expirationWarning == .milliseconds(500))
        #expect(policy.maximumBackgroundTasks == 10)
        #expect(policy.launchTimeout == .seconds(20))
    }

    @Test func anUnknownKeyIsAnError() throws {
        let url = try write(#"{"backgroundTme": 3}"#)
        #expect { try Policy.load(contentsOf: url) } throws: { error in
            "\(error)".hasSuffix("unknown key backgroundTme; did you mean backgroundTime?")
        }
    }

    @Test func budgetsMustFitTogether() throws {
        let url = try write(#"{"backgroundTime": 3, "expirationWarning": 4}"#)
        #expect { try Policy.load(contentsOf: url) } throws: { error in
            "\(error)" == "expirationWarning (4.0 s) must be shorter than backgroundTime (3.0 s)"
        }
    }
}

@Suite struct AppBundleTests {
    private let files = TemporaryFiles()

    private func bundle(_ info: [String: Any]?, plugin: Bool = true) throws -> URL {
        let url = try files.url("bundle-\(UUID().uuidString)/Notes.app")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if let info {
            try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: url.appendingPathComponent("Info.plist"))
        }
        if plugin { try Data().write(to: url.appendingPathComponent("libNotes.so")) }
        return url
    }

    private let valid: [String: Any] = [
        "CFBundleIdentifier": "com.example.notes", "CFBundleExecutable": "libNotes.so",
        "ApplicationDelegateClassName": "Notes.AppDelegate",
    ]

    @Test func aValidBundle() throws {
        let app = try AppBundle(url: try bundle(valid))
        #expect(app.name == "Notes")
        #expect(app.identifier == "com.example.notes")
        #expect(app.delegateClassName == "Notes.AppDelegate")
        #expect(app.pluginURL.lastPathComponent == "libNotes.so")
    }

    @Test(arguments: ["CFBundleIdentifier", "CFBundleExecutable", "ApplicationDelegateClassName"])
    func eachRequiredKeyIsNamedWhenMissing(key: String) throws {
        var info = valid
        info[key] = nil
        #expect { try AppBundle(url: try bundle(info)) } throws: { error in
            "\(error)".hasPrefix("Notes.app/Info.plist: \(key) is missing; ")
        }
    }

    @Test func aWrongTypeIsNamed() throws {
        var info = valid
        info["ApplicationDelegateClassName"] = 7
        #expect { try AppBundle(url: try bundle(info)) } throws: { error in
            "\(error)" == "Notes.app/Info.plist: ApplicationDelegateClassName must be a non-empty string; name the class that conforms to ApplicationDelegate, e.g. Notes.AppDelegate"
        }
    }

    @Test func backgroundModesAndTaskIdentifiersAreRead() throws {
        var info = valid
        info["UIBackgroundModes"] = ["fetch", "processing", "remote-notification", "audio", "location", "voip"]
        info["BGTaskSchedulerPermittedIdentifiers"] = ["com.example.refresh", "com.example.cleanup"]
        let app = try AppBundle(url: try bundle(info))
        #expect(app.backgroundModes == [.fetch, .processing, .remoteNotification, .audio, .location, .voip])
        #expect(app.permittedTaskIdentifiers == ["com.example.refresh", "com.example.cleanup"])
        #expect(try AppBundle(url: try bundle(valid)).backgroundModes.isEmpty)
        info["UIBackgroundModes"] = "fetch"
        #expect { try AppBundle(url: try bundle(info)) } throws: { error in
            "\(error)" == "Notes.app/Info.plist: UIBackgroundModes must be an array of modes: fetch, processing, remote-notification, audio, location, voip"
        }
    }

    @Test(arguments: [
        (["bluetooth-central"], nil,
         "UIBackgroundModes has bluetooth-central, which apphost does not run; known modes: fetch, processing, remote-notification, audio, location, voip"),
        (["remote-notification"], ["com.example.refresh"],
         "BGTaskSchedulerPermittedIdentifiers needs UIBackgroundModes fetch (for app refresh tasks) or processing (for processing tasks)"),
        (["processing"], nil, "UIBackgroundModes processing needs BGTaskSchedulerPermittedIdentifiers listing the identifiers of its tasks"),
        (["fetch"], ["a", "a"], "BGTaskSchedulerPermittedIdentifiers lists a twice"),
        (["fetch"], [""], "BGTaskSchedulerPermittedIdentifiers must be an array of task identifiers such as com.example.refresh"),
    ] as [([String], [String]?, String)])
    func badBackgroundModesSayWhatIsWrong(modes: [String], identifiers: [String]?, message: String) throws {
        var info = valid
        info["UIBackgroundModes"] = modes
        info["BGTaskSchedulerPermittedIdentifiers"] = identifiers
        #expect { try AppBundle(url: try bundle(info)) } throws: { error in
            "\(error)" == "Notes.app/Info.plist: \(message)"
        }
    }

    @Test func aSceneManifestIsRead() throws {
        var info = valid
        #expect(try AppBundle(url: try bundle(info)).adoptsScenes == false)
        info["UIApplicationSceneManifest"] = [
            "UIApplicationSupportsMultipleScenes": true,
            "UISceneConfigurations": ["UIWindowSceneSessionRoleApplication": [
                ["UISceneConfigurationName": "Default Configuration", "UISceneDelegateClassName": "Notes.SceneDelegate", "UISceneStoryboardFile": "Main"],
                ["UISceneConfigurationName": "Editor", "UISceneDelegateClassName": "Notes.EditorDelegate", "UISceneClassName": "UIWindowScene"],
            ]],
        ]
        let app = try AppBundle(url: try bundle(info))
        #expect(app.sceneManifest == WireSceneManifest(supportsMultipleScenes: true, configurations: [
            .init(name: "Default Configuration", delegateClassName: "Notes.SceneDelegate"),
            .init(name: "Editor", delegateClassName: "Notes.EditorDelegate", sceneClassName: "UIWindowScene"),
        ]))
        // An empty manifest adopts scenes with no configuration (the app delegate names classes in code).
        info["UIApplicationSceneManifest"] = [String: Any]()
        #expect(try AppBundle(url: try bundle(info)).sceneManifest == WireSceneManifest(supportsMultipleScenes: false, configurations: []))
    }

    @Test func aBadSceneManifestIsRefusedInOneLine() throws {
        let role = "UIWindowSceneSessionRoleApplication"
        let path = "UIApplicationSceneManifest UISceneConfigurations \(role)"
        let example = "e.g. {UISceneConfigurationName: Default Configuration, UISceneDelegateClassName: Notes.SceneDelegate}"
        let good: [String: Any] = ["UISceneConfigurationName": "Main", "UISceneDelegateClassName": "Notes.SceneDelegate"]
        let cases: [(Any, String)] = [
            ("scenes", "UIApplicationSceneManifest must be a dictionary with UIApplicationSupportsMultipleScenes and UISceneConfigurations"),
            (["UIApplicationSupportsMultipleScenes": "yes"], "UIApplicationSceneManifest UIApplicationSupportsMultipleScenes must be a Boolean"),
            (["UISceneConfigurations": [good]],
             "UIApplicationSceneManifest UISceneConfigurations must be a dictionary keyed by session role, e.g. \(role)"),
            (["UISceneConfigurations": ["UIWindowSceneSessionRoleExternalDisplay": [good]]],
             "UIApplicationSceneManifest UISceneConfigurations has role UIWindowSceneSessionRoleExternalDisplay, which apphost does not connect; the one role is \(role)"),
            (["UISceneConfigurations": [role: [Any]()]], "\(path) must be a non-empty array of configurations, \(example)"),
            (["UISceneConfigurations": [role: ["Main"]]], "\(path) item 0 must be a dictionary, \(example)"),
            (["UISceneConfigurations": [role: [["UISceneDelegateClassName": "Notes.SceneDelegate"]]]],
             "\(path) item 0: UISceneConfigurationName is missing; name the configuration, e.g. Default Configuration"),
            (["UISceneConfigurations": [role: [["UISceneConfigurationName": "Main"]]]],
             "\(path) Main: UISceneDelegateClassName is missing; name the class that conforms to UIWindowSceneDelegate, e.g. Notes.SceneDelegate"),
            (["UISceneConfigurations": [role: [good.merging(["UISceneDelegateClassName": " "]) { $1 }]]],
             "\(path) item 0: UISceneDelegateClassName must be a non-empty string, \(example)"),
            (["UISceneConfigurations": [role: [good.merging(["UISceneClassName": "CPTemplateApplicationScene"]) { $1 }]]],
             "\(path) Main: UISceneClassName CPTemplateApplicationScene is not a scene class apphost makes; use UIWindowScene or leave it out"),
            (["UISceneConfigurations": [role: [good, good]]],
             "\(path) names configuration Main twice; each UISceneConfigurationName must be unique"),
        ]
        for (manifest, message) in cases {
            var info = valid
            info["UIApplicationSceneManifest"] = manifest
            #expect { try AppBundle(url: try bundle(info)) } throws: { error in
                "\(error)" == "Notes.app/Info.plist: \(message)"
            }
        }
    }

    @Test func aMissingPluginAndAMissingPlist() throws {
        #expect { try AppBundle(url: try bundle(valid, plugin: false)) } throws: { error in
            "\(error)" == "Notes.app/libNotes.so is missing (named by CFBundleExecutable); rebuild the bundle"
        }
        #expect { try AppBundle(url: try bundle(nil)) } throws: { error in
            "\(error)" == "Notes.app/Info.plist is missing; an app bundle needs one"
        }
    }

    /// A newcomer points `apphost launch` at the app's package or at its sources.
    @Test func aPackageOrItsSourcesInsteadOfTheBundle() throws {
        let package = try files.url("Notes")
        let sources = package.appendingPathComponent("Sources/Notes")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Data("// swift-tools-version: 6.1".utf8).write(to: package.appendingPathComponent("Package.swift"))
        var info = valid
        info["CFBundleExecutable"] = nil
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: sources.appendingPathComponent("Info.plist"))
        let command = "`swift package --allow-writing-to-package-directory bundle-app --product NAME --output DIR`"
        #expect { try AppBundle(url: package) } throws: { error in
            "\(error)" == "\(package.path) is a package, not an app bundle; build the bundle in it with \(command)"
        }
        #expect { try AppBundle(url: sources) } throws: { error in
            "\(error)" == "Notes/Info.plist has no CFBundleExecutable: this is an app's sources, not its bundle; build the bundle in its package with \(command)"
        }
    }
}

@Suite struct FileLockTests {
    @Test(arguments: [
        ("lock:\t1: FLOCK  ADVISORY  WRITE 4242 fe:00:1234 0 EOF", "flock write lock"),
        ("lock:\t1: POSIX  ADVISORY  READ 4242 fe:00:1234 1073741826 1073742335", "POSIX read lock (bytes 1073741826-1073742335)"),
        ("lock:\t2: OFDLCK ADVISORY  WRITE -1 fe:00:1234 0 EOF", "OFD write lock"),
    ])
    func fdinfoLockLinesParse(line: String, description: String) throws {
        let lock = try #require(FileLock(fdinfoLine: Substring(line)))
        #expect(lock.description == description)
    }

    @Test func otherLinesAreNotLocks() {
        #expect(FileLock(fdinfoLine: "pos:\t0") == nil)
        #expect(FileLock(fdinfoLine: "flags:\t02100001") == nil)
    }
}
