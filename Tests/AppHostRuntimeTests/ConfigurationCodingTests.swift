import Foundation
import Testing
@testable import AppHostProtocol

/// The configuration's compact layout (ConfigurationCoding.swift): every part survives it, and
/// anything but a whole configuration is an error.
struct ConfigurationCodingTests {
    @Test func everyPartSurvivesTheCompactLayout() throws {
        let configuration = WireConfiguration.everyPart
        let bytes = configuration.compactBytes
        #expect(try WireConfiguration(compact: bytes[...]) == configuration)
        // As the configure message carries it.
        #expect(try WireCoding.decode(HostMessage.self, from: WireCoding.encode(HostMessage.configure(configuration))) == .configure(configuration))
        // The smallest, with every optional part absent.
        let bare = WireConfiguration(
            bundleIdentifier: "b", bundleName: "B", bundlePath: "/B.app", pluginPath: "/B.app/libB.so", delegateClassName: "B.D",
            containerPath: "/", launchReason: "background")
        #expect(try WireConfiguration(compact: bare.compactBytes[...]) == bare)
        // Text that is not ASCII.
        var named = bare
        named.bundleName = "Café ☕️"
        #expect(try WireConfiguration(compact: named.compactBytes[...]).bundleName == "Café ☕️")
    }

    @Test func anythingButAWholeConfigurationIsAnError() throws {
        let bytes = WireConfiguration.everyPart.compactBytes
        // Cut short anywhere.
        for length in 0..<bytes.count {
            #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: bytes[..<length]) }
        }
        // A byte too many.
        #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: (bytes + [0])[...]) }
        // A presence flag other than 0 or 1 (the capabilities' flag follows the seven strings).
        var flag = WireConfiguration.everyPart.compactBytes
        let flagOffset = 8 + [
            "every.part", "EveryPart", "/EveryPart.app", "/EveryPart.app/libEveryPart.so", "EveryPart.Delegate", "/c", "user",
        ].reduce(0) { $0 + 4 + $1.utf8.count }
        #expect(flag[flagOffset] == 1)
        flag[flagOffset] = 2
        #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: flag[...]) }
        // A count larger than what remains.
        var count = flag
        count[flagOffset] = 1
        count.replaceSubrange((flagOffset + 1)..<(flagOffset + 5), with: [0xff, 0xff, 0xff, 0x7f])
        #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: count[...]) }
        // An enum value that does not exist.
        var unknown = WireConfiguration.everyPart
        unknown.transfers = nil
        var kind = unknown.compactBytes
        let refresh = Array("appRefresh".utf8)
        let at = try #require((0...(kind.count - refresh.count)).first { Array(kind[$0..<($0 + refresh.count)]) == refresh })
        kind[at] = UInt8(ascii: "x")
        #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: kind[...]) }
        // Launch callbacks other than willFinishLaunching, didFinishLaunching, then didBecomeActive.
        for callbacks: [WireCallback] in [
            [.didFinishLaunching], [.willFinishLaunching, .didBecomeActive], [.didFinishLaunching, .willFinishLaunching],
            [.willFinishLaunching, .didFinishLaunching, .willEnterForeground], [.willFinishLaunching, .didFinishLaunching, .didBecomeActive, .didBecomeActive],
        ] {
            var launch = WireConfiguration.everyPart
            launch.launchCallbacks = callbacks.map { WireCallbackRequest(id: 1, callback: $0, state: .inactive) }
            #expect(throws: CompactCodingError.self) { try WireConfiguration(compact: launch.compactBytes[...]) }
        }
        var first = WireConfiguration.everyPart
        first.launchCallbacks?.removeLast()
        #expect(try WireConfiguration(compact: first.compactBytes[...]) == first)
    }

    /// The launch template's request and reply, in the same layout.
    @Test func theTemplatesRequestAndReplySurviveTheCompactLayout() throws {
        let request = LaunchTemplateRequest(
            namespaces: 3, initArguments: ["/apphost-init", "--hide", "/state"], environment: ["HOME=/c", "LANG=C.UTF-8"], intoCgroup: true,
            requireCgroup: true)
        let decoded = try LaunchTemplateRequest(compact: request.compactBytes[...])
        #expect(decoded.namespaces == 3 && decoded.initArguments == request.initArguments && decoded.environment == request.environment)
        #expect(decoded.intoCgroup && decoded.requireCgroup)
        #expect(throws: CompactCodingError.self) { try LaunchTemplateRequest(compact: request.compactBytes.dropLast()) }
        for reply in [LaunchTemplateReply(pid: 42, startedInCgroup: true), LaunchTemplateReply(errno: 12, failure: "fork of the template: Cannot allocate memory")] {
            let decoded = try LaunchTemplateReply(compact: reply.compactBytes[...])
            #expect(decoded.pid == reply.pid && decoded.startedInCgroup == reply.startedInCgroup)
            #expect(decoded.errno == reply.errno && decoded.failure == reply.failure)
            #expect(throws: CompactCodingError.self) { try LaunchTemplateReply(compact: (reply.compactBytes + [1])[...]) }
        }
    }
}
