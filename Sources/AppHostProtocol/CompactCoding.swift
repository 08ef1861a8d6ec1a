// The two messages on every callback's path — the request and its acknowledgement — in a fixed
// binary layout instead of JSON: Foundation's JSON coder took about a third of the app's and the
// host's work in a callback's round trip. Every other message, and these two when they carry
// what the fixed layout has no room for (an event, a scene, a snapshot), stays JSON.
//
// A compact body starts with its tag, a byte no JSON text starts with, so a reader tells the two
// apart by the first byte. It is checked as strictly as JSON: the exact length for its tag, and
// every enumeration in range; anything else is not a message (a protocol violation on the host).
//
//   callback  0x01, id (8 bytes, little-endian), callback (1: WireCallback's index), state (1),
//             state after (1; 0xff: none), background time remaining (1: present, 0: not; then
//             8 bytes, the Double's bits, little-endian)                               = 21 bytes
//   ack       0x02, id (8 bytes, little-endian), returned (1: 0 false, 1 true, 0xff none) = 10 bytes
//   ack, then the next configured callback runs
//             0x07, id (8 bytes, little-endian)                                        = 9 bytes
//   withdraw  0x08, id (8 bytes, little-endian)                                        = 9 bytes
//             (host to app, on the launch's path: the first JSON message a fresh plugin
//             decoded would cost it milliseconds, and a withdrawal that late comes too late)
//
// The messages on a launch's path are compact or tagged for another reason: the first messages
// an app process codes are slow to code as JSON (each type's first trip through Foundation's
// coder looks up its conformances across every loaded image, about 2 ms for `ready` in a fresh
// plugin; a fork of the launch template copies each page the coder touches).
//
//   ready     0x03, protocol version (8 bytes, little-endian)                            = 9 bytes
//   hello     0x05, protocol version (8), pid (4, little-endian)                         = 13 bytes
//   sandboxed 0x06, listener (1: 0 or 1), Landlock ABI (4), uid (4), seconds confining
//             took (8, the Double's bits; 0 up to a day)                               = 18 bytes
//   configure 0x04, then the configuration (WireConfiguration) in its own binary layout
//             (ConfigurationCoding.swift); the runner hands those bytes to the plugin's entry
//             point as they came, without coding them again

/// Why a compact body is not a message.
package struct CompactCodingError: Error, CustomStringConvertible {
    package let description: String
}

enum CompactCoding {
    static let callbackTag: UInt8 = 0x01
    static let ackTag: UInt8 = 0x02
    static let callbackLength = 21
    static let ackLength = 10
    static let readyTag: UInt8 = 0x03
    static let readyLength = 9
    static let configureTag: UInt8 = 0x04
    static let helloTag: UInt8 = 0x05
    static let helloLength = 13
    static let sandboxedTag: UInt8 = 0x06
    static let sandboxedLength = 18
    static let ackThenNextTag: UInt8 = 0x07
    static let ackThenNextLength = 9
    static let withdrawTag: UInt8 = 0x08
    static let withdrawLength = 9
    static let none: UInt8 = 0xff

    // MARK: Host to app

    static func encode(_ request: WireCallbackRequest) -> [UInt8]? {
        guard request.event == nil, request.scene == nil,
              let callback = WireCallback.allCases.firstIndex(of: request.callback) else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(callbackLength)
        bytes.append(callbackTag)
        append(request.id, to: &bytes)
        bytes.append(UInt8(callback))
        bytes.append(UInt8(request.state.rawValue))
        bytes.append(request.stateAfter.map { UInt8($0.rawValue) } ?? none)
        bytes.append(request.backgroundTimeRemaining == nil ? 0 : 1)
        append(request.backgroundTimeRemaining?.bitPattern ?? 0, to: &bytes)
        return bytes
    }

    static func decodeCallback(_ body: [UInt8]) throws(CompactCodingError) -> WireCallbackRequest {
        guard body.count == callbackLength else { throw CompactCodingError(description: "a compact callback of \(body.count) bytes, not \(callbackLength)") }
        guard Int(body[9]) < WireCallback.allCases.count else { throw CompactCodingError(description: "a compact callback naming callback \(body[9]), which does not exist") }
        let state = try applicationState(body[10])
        let after = body[11] == none ? nil : try applicationState(body[11])
        guard body[12] <= 1 else { throw CompactCodingError(description: "a compact callback whose background-time flag is \(body[12])") }
        var request = WireCallbackRequest(
            id: integer(body, at: 1), callback: WireCallback.allCases[Int(body[9])], state: state, stateAfter: after)
        if body[12] == 1 {
            let remaining = Double(bitPattern: integer(body, at: 13))
            guard remaining.isFinite else { throw CompactCodingError(description: "a compact callback whose background time is \(remaining)") }
            request.backgroundTimeRemaining = remaining
        }
        return request
    }

    // MARK: App to host

    static func encodeAck(id: UInt64, returned: Bool?) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(ackLength)
        bytes.append(ackTag)
        append(id, to: &bytes)
        bytes.append(returned.map { $0 ? 1 : 0 } ?? none)
        return bytes
    }

    static func decodeAck(_ body: [UInt8]) throws(CompactCodingError) -> AppMessage {
        guard body.count == ackLength else { throw CompactCodingError(description: "a compact ack of \(body.count) bytes, not \(ackLength)") }
        let returned: Bool?
        switch body[9] {
        case 0: returned = false
        case 1: returned = true
        case none: returned = nil
        default: throw CompactCodingError(description: "a compact ack whose returned value is \(body[9])")
        }
        return .ack(id: integer(body, at: 1), returned: returned, snapshot: nil)
    }

    static func encodeAckThenNext(id: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [ackThenNextTag]
        append(id, to: &bytes)
        return bytes
    }

    static func encodeWithdraw(id: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [withdrawTag]
        append(id, to: &bytes)
        return bytes
    }

    static func decodeWithdraw(_ body: [UInt8]) throws(CompactCodingError) -> HostMessage {
        guard body.count == withdrawLength else { throw CompactCodingError(description: "a compact withdraw of \(body.count) bytes, not \(withdrawLength)") }
        return .withdraw(id: integer(body, at: 1))
    }

    static func decodeAckThenNext(_ body: [UInt8]) throws(CompactCodingError) -> AppMessage {
        guard body.count == ackThenNextLength else {
            throw CompactCodingError(description: "a compact ack-then-next of \(body.count) bytes, not \(ackThenNextLength)")
        }
        return .ackThenNext(id: integer(body, at: 1))
    }

    // MARK: Launch

    static func encodeReady(protocolVersion: Int) -> [UInt8] {
        var bytes: [UInt8] = [readyTag]
        append(UInt64(bitPattern: Int64(protocolVersion)), to: &bytes)
        return bytes
    }

    static func decodeReady(_ body: [UInt8]) throws(CompactCodingError) -> AppMessage {
        guard body.count == readyLength else { throw CompactCodingError(description: "a compact ready of \(body.count) bytes, not \(readyLength)") }
        return .ready(protocolVersion: Int(Int64(bitPattern: integer(body, at: 1))))
    }

    static func encodeHello(protocolVersion: Int, pid: Int32) -> [UInt8] {
        var bytes: [UInt8] = [helloTag]
        append(UInt64(bitPattern: Int64(protocolVersion)), to: &bytes)
        append32(UInt32(bitPattern: pid), to: &bytes)
        return bytes
    }

    static func decodeHello(_ body: [UInt8]) throws(CompactCodingError) -> AppMessage {
        guard body.count == helloLength else { throw CompactCodingError(description: "a compact hello of \(body.count) bytes, not \(helloLength)") }
        return .hello(protocolVersion: Int(Int64(bitPattern: integer(body, at: 1))), pid: Int32(bitPattern: integer32(body, at: 9)))
    }

    static func encodeSandboxed(listener: Bool, landlockABI: Int32, uid: UInt32, seconds: Double) -> [UInt8] {
        var bytes: [UInt8] = [sandboxedTag, listener ? 1 : 0]
        append32(UInt32(bitPattern: landlockABI), to: &bytes)
        append32(uid, to: &bytes)
        append(seconds.bitPattern, to: &bytes)
        return bytes
    }

    static func decodeSandboxed(_ body: [UInt8]) throws(CompactCodingError) -> AppMessage {
        guard body.count == sandboxedLength else {
            throw CompactCodingError(description: "a compact sandboxed of \(body.count) bytes, not \(sandboxedLength)")
        }
        guard body[1] <= 1 else { throw CompactCodingError(description: "a compact sandboxed whose listener flag is \(body[1])") }
        let seconds = Double(bitPattern: integer(body, at: 10))
        // A day is far beyond any confinement, and the host turns it into nanoseconds.
        guard seconds.isFinite, seconds >= 0, seconds < 86_400 else { throw CompactCodingError(description: "a compact sandboxed that took \(seconds) s") }
        return .sandboxed(
            listener: body[1] == 1, landlockABI: Int32(bitPattern: integer32(body, at: 2)), uid: integer32(body, at: 6), seconds: seconds)
    }

    // MARK: Bytes

    private static func applicationState(_ byte: UInt8) throws(CompactCodingError) -> WireApplicationState {
        guard let state = WireApplicationState(rawValue: Int(byte)) else {
            throw CompactCodingError(description: "a compact callback with application state \(byte), which does not exist")
        }
        return state
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func append32(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func integer32(_ body: [UInt8], at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(body[offset + index]) << (8 * UInt32(index)) }
        return value
    }

    private static func integer(_ body: [UInt8], at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(body[offset + index]) << (8 * UInt64(index)) }
        return value
    }
}

extension WireCoding {
    /// A host message's body: compact for a plain callback request, a configuration and a
    /// withdrawal, else JSON.
    package static func encode(_ message: HostMessage) -> [UInt8] {
        switch message {
        case .callback(let request): if let bytes = CompactCoding.encode(request) { return bytes }
        case .withdraw(let id): return CompactCoding.encodeWithdraw(id: id)
        case .configure(let configuration): return [CompactCoding.configureTag] + configuration.compactBytes
        default: break
        }
        return encode(json: message)
    }

    /// The configuration's bytes in a configure message's body (what the runner hands to the
    /// plugin's entry point, which reads them with `WireConfiguration(compact:)`), nil if the
    /// body is another message.
    package static func configurationBytes(in body: [UInt8]) -> ArraySlice<UInt8>? {
        body.first == CompactCoding.configureTag ? body.dropFirst() : nil
    }

    /// An app message's body: compact for an acknowledgement without a snapshot (and one that
    /// runs the next configured callback) and for the launch's `hello`, `sandboxed` and `ready`,
    /// else JSON.
    package static func encode(_ message: AppMessage) -> [UInt8] {
        switch message {
        case .ack(let id, let returned, nil): return CompactCoding.encodeAck(id: id, returned: returned)
        case .ackThenNext(let id): return CompactCoding.encodeAckThenNext(id: id)
        case .ready(let version): return CompactCoding.encodeReady(protocolVersion: version)
        case .hello(let version, let pid): return CompactCoding.encodeHello(protocolVersion: version, pid: pid)
        case .sandboxed(let listener, let landlockABI, let uid, let seconds):
            return CompactCoding.encodeSandboxed(listener: listener, landlockABI: landlockABI, uid: uid, seconds: seconds)
        default: return encode(json: message)
        }
    }

    /// A host message from its body, compact or JSON.
    package static func decode(_ type: HostMessage.Type, from body: [UInt8]) throws -> HostMessage {
        switch body.first {
        case CompactCoding.callbackTag: .callback(try CompactCoding.decodeCallback(body))
        case CompactCoding.withdrawTag: try CompactCoding.decodeWithdraw(body)
        case CompactCoding.configureTag: .configure(try WireConfiguration(compact: body.dropFirst()))
        default: try decode(json: type, from: body)
        }
    }

    /// An app message from its body, compact or JSON.
    package static func decode(_ type: AppMessage.Type, from body: [UInt8]) throws -> AppMessage {
        switch body.first {
        case CompactCoding.ackTag: try CompactCoding.decodeAck(body)
        case CompactCoding.ackThenNextTag: try CompactCoding.decodeAckThenNext(body)
        case CompactCoding.readyTag: try CompactCoding.decodeReady(body)
        case CompactCoding.helloTag: try CompactCoding.decodeHello(body)
        case CompactCoding.sandboxedTag: try CompactCoding.decodeSandboxed(body)
        default: try decode(json: type, from: body)
        }
    }
}
