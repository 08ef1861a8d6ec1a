import AppHostProtocol
import Foundation

/// The control protocol's rules for one frame an app sends, as pure functions: whether it is a
/// message, whether the stage accepts it, which descriptors it may carry, whether its fields are
/// ones the host speaks. The loop reads the frames, asks `admit`, and acts on what it answers;
/// nothing here touches a socket or a descriptor.
extension ControlStage {
    /// Bytes of one app's control channel read per turn of the loop, and frames taken: a chatty
    /// app cannot hold up other apps (what is left is read on the next turn).
    static let bytesPerTurn = 64 * 1024
    static let framesPerTurn = 128
    /// Refused calls answered per turn from one app's seccomp listener (the listener `sandboxed`
    /// hands over): threads that keep making refused calls cannot hold up other apps.
    static let refusalsPerTurn = 64
    /// Text an app sends (warnings, launch failures, snapshots, log records) is cut to this many
    /// bytes; a logger's label to `labelLimit`.
    static let textLimit = 4096
    static let labelLimit = 256

    /// What the host makes of one frame.
    enum Admission: Equatable {
        /// A message to act on, its texts cut to the limits, and the seccomp listener it handed
        /// over (only `sandboxed` does), now the host's to keep or close.
        case message(AppMessage, listener: Int32?)
        /// The app broke the protocol: why, for the person running the host.
        case violation(String)

        /// The one descriptor the host keeps from the frame, if any.
        var listener: Int32? {
            if case .message(_, let listener) = self { listener } else { nil }
        }

        /// The frame's descriptors the host does not keep: every one but the listener. The caller
        /// closes them, so every descriptor received is either kept or closed, once.
        func unkept(of frame: ReceivedFrame) -> [Int32] {
            frame.descriptors.filter { $0 != listener }
        }
    }

    /// Judges one frame in this stage, in the order the app is told of the first thing wrong: it
    /// must decode as a message, the stage must accept that message, it may carry only the
    /// descriptors the message carries, and its fields must be ones the host speaks
    /// (`pidInNamespace` is the pid the app has in its own namespace, which `hello` names).
    func admit(_ frame: ReceivedFrame, pidInNamespace: Int32) -> Admission {
        let message: AppMessage
        do {
            message = try WireCoding.decode(AppMessage.self, from: frame.body)
        } catch {
            let preview = String(decoding: frame.body.prefix(40), as: UTF8.self)
            return .violation("it sent a frame that is not a message (\(frame.body.count) bytes: \(preview.debugDescription))")
        }
        if let refusal = refusal(of: message) { return .violation(refusal) }
        var listener: Int32?
        if case .sandboxed(true, _, _, _) = message, frame.descriptors.count <= 1 {
            listener = frame.descriptors.last
        } else if !frame.descriptors.isEmpty {
            let count = frame.descriptors.count
            let carries = if case .sandboxed = message { "at most one" } else { "none" }
            return .violation("it passed \(count) descriptor\(count == 1 ? "" : "s") with \(message.name), which carries \(carries)")
        }
        return Self.bounded(message, listener: listener, pidInNamespace: pidInNamespace)
    }

    /// Why this stage does not accept `message`, or nil if it does (the protocol's table,
    /// `accepts`).
    func refusal(of message: AppMessage) -> String? {
        accepts(message) ? nil : "it sent \(message.name) \(activity)"
    }

    /// Why reading the control channel ended, if the app broke the protocol; nil if it simply
    /// closed its end.
    static func violation(endingWith end: FrameReceiver.End) -> String? {
        switch end {
        case .closed:
            return nil
        case .framing(let error):
            return "it sent a \(error)"
        case .tooManyDescriptors(let count):
            return "it passed \(count) descriptor\(count == 1 ? "" : "s") on its control socket outside a message; "
                + "only sandboxed carries one, the seccomp listener"
        }
    }

    /// The message as the host takes it (with `listener`), or why its fields are not ones the
    /// host speaks: versions it speaks, the app's own pid, a log level swift-log has, call UUIDs
    /// (spelled as `UUID` spells them), texts cut to their limits.
    private static func bounded(_ message: AppMessage, listener: Int32?, pidInNamespace: Int32) -> Admission {
        switch message {
        case .hello(let version, let pid):
            if version != wireProtocolVersion {
                return .violation("it speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
            }
            if pid != pidInNamespace {
                return .violation("it sent hello with pid \(pid), but its pid is \(pidInNamespace)")
            }
        case .ready(let version) where version != wireProtocolVersion:
            return .violation("its SDK speaks control protocol \(version); this host speaks \(wireProtocolVersion)")
        case .launchFailed(let reason):
            return .message(.launchFailed(reason: reason.cut(to: textLimit)), listener: listener)
        case .ack(let id, let returned, let snapshot):
            return .message(.ack(id: id, returned: returned, snapshot: snapshot?.cut(to: textLimit)), listener: listener)
        case .warning(let text):
            return .message(.warning(text.cut(to: textLimit)), listener: listener)
        case .log(let level, let label, let text):
            guard LogLevel(rawValue: level) != nil else {
                return .violation("it sent a log record of level \(level.cut(to: 32).debugDescription), which swift-log does not have")
            }
            return .message(.log(level: level, label: label.cut(to: labelLimit), message: text.cut(to: textLimit)), listener: listener)
        case .callReported(let uuid), .callEnded(let uuid):
            guard let call = UUID(uuidString: uuid) else {
                return .violation("it sent \(message.name) for \(uuid.cut(to: 64).debugDescription), which is not a UUID")
            }
            if case .callReported = message { return .message(.callReported(uuid: call.uuidString), listener: listener) }
            return .message(.callEnded(uuid: call.uuidString), listener: listener)
        default:
            break
        }
        return .message(message, listener: listener)
    }
}

extension String {
    /// At most `limit` bytes of UTF-8, marked where cut.
    func cut(to limit: Int) -> String {
        guard utf8.count > limit else { return self }
        return String(decoding: utf8.prefix(limit), as: UTF8.self) + " [cut at \(limit) bytes]"
    }
}
