import Foundation
import Testing
@testable import AppHostProtocol
@testable import AppHostRuntime

/// The control protocol's rules (ControlStage, ControlStage+Admission): which message an app may
/// send when, which descriptors it may pass, which fields the host speaks, how much text it keeps.
/// Each violation text is the one the person running the host reads; end to end the same texts
/// are checked by ControlChannelTests and CrashAndBadInputTests.
@Suite struct ControlStageTests {
    /// The pid the app has in its own namespace, which its `hello` must name.
    private let appPID: Int32 = 2

    private func frame(_ message: AppMessage, _ descriptors: [Int32] = []) -> ReceivedFrame {
        ReceivedFrame(body: WireCoding.encode(message), descriptors: descriptors)
    }

    private func admit(_ message: AppMessage, in stage: ControlStage, _ descriptors: [Int32] = []) -> ControlStage.Admission {
        stage.admit(frame(message, descriptors), pidInNamespace: appPID)
    }

    @Test func theHandshakeComesInOrderAndEverythingElseAfterIt() {
        let hello = AppMessage.hello(protocolVersion: 1, pid: 2)
        let sandboxed = AppMessage.sandboxed(listener: true, landlockABI: 7, uid: 0, seconds: 0.001)
        let ready = AppMessage.ready(protocolVersion: 1)
        let ack = AppMessage.ack(id: 1, returned: true, snapshot: nil)
        var stage = ControlStage.awaitingHello
        for (message, next) in [(hello, ControlStage.confining), (sandboxed, .loading), (ready, .running)] {
            #expect(stage.accepts(message))
            #expect(!stage.accepts(ack), "no acknowledgement at \(stage)")
            stage = stage.after(message)
            #expect(stage == next)
            #expect(!stage.accepts(message), "\(message.name) twice")
        }
        #expect(stage.accepts(ack) && stage.after(ack) == .running)
        #expect(!stage.accepts(.launchFailed(reason: "late")), "a running app does not fail its launch")
        #expect(ControlStage.loading.accepts(.launchFailed(reason: "no delegate")))
        #expect(!ControlStage.awaitingHello.accepts(.warning("early")) && ControlStage.loading.accepts(.warning("loading")))
    }

    @Test func aFrameThatIsNotAMessageIsAViolationQuotingItsStart() {
        let garbage = ReceivedFrame(body: Array("this is not JSON at all".utf8), descriptors: [5])
        let admission = ControlStage.running.admit(garbage, pidInNamespace: appPID)
        #expect(admission == .violation(#"it sent a frame that is not a message (23 bytes: "this is not JSON at all")"#))
        #expect(admission.unkept(of: garbage) == [5])
        let long = ReceivedFrame(body: Array(repeating: UInt8(ascii: "x"), count: 100), descriptors: [])
        #expect(ControlStage.running.admit(long, pidInNamespace: appPID)
            == .violation("it sent a frame that is not a message (100 bytes: \"\(String(repeating: "x", count: 40))\")"))
    }

    /// Regression (ControlChannelTests.aSecondSandboxedMessageWithADescriptorEndsTheApp): a second
    /// `sandboxed` carrying an eventfd of the app's own was taken as its seccomp listener. The
    /// stage is judged before the descriptors and the fields, so the app is told it is out of turn.
    @Test func aMessageOutOfTurnIsAViolationBeforeItsDescriptorsAndFields() {
        let forgedFrame = frame(.sandboxed(listener: true, landlockABI: 0, uid: 0, seconds: 0), [9])
        let forged = ControlStage.running.admit(forgedFrame, pidInNamespace: appPID)
        #expect(forged == .violation("it sent sandboxed while running"))
        #expect(forged.listener == nil && forged.unkept(of: forgedFrame) == [9], "its descriptor is closed, not kept")
        #expect(admit(.hello(protocolVersion: 0, pid: 99), in: .running) == .violation("it sent hello while running"))
        #expect(admit(.ack(id: 1, returned: nil, snapshot: nil), in: .awaitingHello) == .violation("it sent ack before its hello"))
        #expect(admit(.ready(protocolVersion: wireProtocolVersion), in: .confining) == .violation("it sent ready while being confined"))
        #expect(admit(.hello(protocolVersion: wireProtocolVersion, pid: appPID), in: .loading)
            == .violation("it sent hello while its plugin was loading"))
    }

    @Test func sandboxedHandsOverOneListenerAtMost() {
        let withListener = AppMessage.sandboxed(listener: true, landlockABI: 5, uid: 2_000_000_001, seconds: 0.01)
        let admitted = admit(withListener, in: .confining, [7])
        #expect(admitted == .message(withListener, listener: 7))
        #expect(admitted.unkept(of: frame(withListener, [7])) == [])
        #expect(admit(withListener, in: .confining) == .message(withListener, listener: nil), "degraded: no listener came")
        let two = admit(withListener, in: .confining, [7, 8])
        #expect(two == .violation("it passed 2 descriptors with sandboxed, which carries at most one"))
        #expect(two.unkept(of: frame(withListener, [7, 8])) == [7, 8])
        let without = AppMessage.sandboxed(listener: false, landlockABI: 0, uid: 1000, seconds: 0)
        #expect(admit(without, in: .confining, [7]) == .violation("it passed 1 descriptor with sandboxed, which carries at most one"))
        #expect(admit(without, in: .confining) == .message(without, listener: nil))
    }

    @Test func everyOtherMessageCarriesNoDescriptor() {
        #expect(admit(.warning("hi"), in: .running, [5]) == .violation("it passed 1 descriptor with warning, which carries none"))
        #expect(admit(.hello(protocolVersion: wireProtocolVersion, pid: appPID), in: .awaitingHello, [5, 6])
            == .violation("it passed 2 descriptors with hello, which carries none"))
        #expect(admit(.ack(id: 3, returned: nil, snapshot: nil), in: .running, [5, 6, 7])
            == .violation("it passed 3 descriptors with ack, which carries none"))
    }

    /// Every descriptor received is either the listener the host keeps or one the caller closes,
    /// never both and never neither, whatever the stage, the message and the outcome.
    @Test func everyDescriptorIsKeptOrClosedExactlyOnce() {
        let messages: [AppMessage] = [
            .hello(protocolVersion: wireProtocolVersion, pid: appPID), .hello(protocolVersion: 0, pid: appPID),
            .sandboxed(listener: true, landlockABI: 1, uid: 0, seconds: 0), .sandboxed(listener: false, landlockABI: 1, uid: 0, seconds: 0),
            .ready(protocolVersion: wireProtocolVersion), .warning("w"), .log(level: "nope", label: "l", message: "m"),
            .ack(id: 1, returned: true, snapshot: nil), .callReported(uuid: "x"),
        ]
        let stages: [ControlStage] = [.awaitingHello, .confining, .loading, .running]
        var kept = 0
        for stage in stages {
            for descriptors in [[], [3], [3, 4], [3, 4, 5]] as [[Int32]] {
                var frames = messages.map { frame($0, descriptors) }
                frames.append(ReceivedFrame(body: Array("{".utf8), descriptors: descriptors))
                for received in frames {
                    let admission = stage.admit(received, pidInNamespace: appPID)
                    let accounted = admission.unkept(of: received) + (admission.listener.map { [$0] } ?? [])
                    #expect(accounted.sorted() == descriptors, "\(stage), \(admission)")
                    if let listener = admission.listener {
                        kept += 1
                        #expect(stage == .confining && descriptors == [listener])
                        #expect(admission == .message(.sandboxed(listener: true, landlockABI: 1, uid: 0, seconds: 0), listener: listener))
                    }
                }
            }
        }
        #expect(kept == 1, "one listener, from the one sandboxed that carries it")
    }

    @Test func descriptorsOutsideAMessageAndBadFramingEndTheChannel() {
        #expect(ControlStage.violation(endingWith: .tooManyDescriptors(1))
            == "it passed 1 descriptor on its control socket outside a message; only sandboxed carries one, the seccomp listener")
        #expect(ControlStage.violation(endingWith: .tooManyDescriptors(3))
            == "it passed 3 descriptors on its control socket outside a message; only sandboxed carries one, the seccomp listener")
        #expect(ControlStage.violation(endingWith: .framing(.oversize(1 << 40)))
            == "it sent a frame of 1099511627776 bytes exceeds the \(Framing.maximumBodyLength)-byte limit")
        #expect(ControlStage.violation(endingWith: .framing(.closedMidFrame(5)))
            == "it sent a connection closed with 5 bytes of an unfinished frame")
        #expect(ControlStage.violation(endingWith: .closed) == nil, "closing its end is no violation")
    }

    @Test func helloSpeaksTheHostsVersionAndNamesTheAppsOwnPid() {
        let good = AppMessage.hello(protocolVersion: wireProtocolVersion, pid: appPID)
        #expect(admit(good, in: .awaitingHello) == .message(good, listener: nil))
        #expect(admit(.hello(protocolVersion: 3, pid: appPID), in: .awaitingHello)
            == .violation("it speaks control protocol 3; this host speaks \(wireProtocolVersion)"))
        #expect(admit(.hello(protocolVersion: wireProtocolVersion, pid: 4242), in: .awaitingHello)
            == .violation("it sent hello with pid 4242, but its pid is 2"))
        #expect(admit(.hello(protocolVersion: 3, pid: 4242), in: .awaitingHello)
            == .violation("it speaks control protocol 3; this host speaks \(wireProtocolVersion)"), "the version first")
    }

    @Test func readySpeaksTheHostsVersion() {
        let good = AppMessage.ready(protocolVersion: wireProtocolVersion)
        #expect(admit(good, in: .loading) == .message(good, listener: nil))
        #expect(admit(.ready(protocolVersion: wireProtocolVersion + 1), in: .loading)
            == .violation("its SDK speaks control protocol \(wireProtocolVersion + 1); this host speaks \(wireProtocolVersion)"))
    }

    @Test func aLogRecordHasALevelSwiftLogHas() {
        for level in LogLevel.allCases {
            let record = AppMessage.log(level: level.rawValue, label: "app", message: "text")
            #expect(admit(record, in: .running) == .message(record, listener: nil))
        }
        #expect(admit(.log(level: "verbose", label: "app", message: "text"), in: .loading)
            == .violation(#"it sent a log record of level "verbose", which swift-log does not have"#))
        let long = String(repeating: "v", count: 40)
        #expect(admit(.log(level: long, label: "app", message: "text"), in: .running)
            == .violation("it sent a log record of level \"\(String(repeating: "v", count: 32)) [cut at 32 bytes]\", which swift-log does not have"))
    }

    @Test func aCallIsNamedByAUUIDSpelledAsUUIDSpellsIt() {
        #expect(admit(.callReported(uuid: "not-a-uuid"), in: .running)
            == .violation(#"it sent callReported for "not-a-uuid", which is not a UUID"#))
        #expect(admit(.callEnded(uuid: ""), in: .running) == .violation(#"it sent callEnded for "", which is not a UUID"#))
        let uuid = "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"
        #expect(admit(.callReported(uuid: uuid), in: .running) == .message(.callReported(uuid: uuid.uppercased()), listener: nil))
        #expect(admit(.callEnded(uuid: uuid), in: .running) == .message(.callEnded(uuid: uuid.uppercased()), listener: nil))
    }

    @Test func textsAreCutToTheProtocolsLimits() {
        let limit = ControlStage.textLimit
        #expect(limit == 4096 && ControlStage.labelLimit == 256)
        let long = String(repeating: "a", count: limit + 1)
        let cut = String(repeating: "a", count: limit) + " [cut at \(limit) bytes]"
        #expect(admit(.warning(long), in: .running) == .message(.warning(cut), listener: nil))
        #expect(admit(.launchFailed(reason: long), in: .loading) == .message(.launchFailed(reason: cut), listener: nil))
        #expect(admit(.ack(id: 4, returned: true, snapshot: long), in: .running)
            == .message(.ack(id: 4, returned: true, snapshot: cut), listener: nil))
        let label = String(repeating: "l", count: 300)
        #expect(admit(.log(level: "info", label: label, message: long), in: .running)
            == .message(.log(level: "info", label: String(repeating: "l", count: 256) + " [cut at 256 bytes]", message: cut), listener: nil))
        let exact = String(repeating: "a", count: limit)
        #expect(admit(.warning(exact), in: .running) == .message(.warning(exact), listener: nil), "at the limit: kept whole")
    }
}
