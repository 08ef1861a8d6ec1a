import AppHostKit
import AppHostProtocol
import Foundation
import CAppHostShims
import ProbeSyscalls

// Attacks on the host through the control socket (fd 3) and the output pipe, each the hole a
// hostile app found (Tests/EndToEndTests/ControlChannelTests.swift says what the host must do):
//
//   wireAttack  "sandboxedWithDescriptor"  a second `sandboxed` frame, listener: true, with an
//                                          eventfd of the app's own attached (already readable)
//               "descriptorPerByte"        valid `warning` frames sent one byte per sendmsg, each
//                                          byte carrying a fresh eventfd
//               "hello"                    a `hello` carrying the host's pid
//               "sandboxedAsRoot"          a second `sandboxed` frame, no descriptor, uid 0
//               "logUnknownLevel"          a `log` frame of a level swift-log does not have
//               "compactAckOutOfTurn"      an `ack` in the compact form for callback 999999, which
//                                          is not running
//               "compactAckTruncated"      a compact `ack`'s tag and four bytes of its id
//               "transferTwice"            `transferCreated` for the same task of a session twice
//               "transferDeliveredUnsent"  `transferDelivered` for a transfer the host never sent
//               "transferOfHostFile"       `transferCreated`, past the SDK's check, for an upload
//                                          of /etc/shadow (outside the container)
//               "transferWithEscapes"      `transferCreated` whose session and URL carry terminal
//                                          escapes and a forged newline
//   flood       "lines"                    16-byte lines on stdout, as fast as a thread can write
//                                          (64 KiB of them per write)
//               "noNewline"                the same bytes with no newline at all
//   longLine    N                          one line of N bytes (N-1 letters and "\n"), then "long line done"
//   terminalEscapes true                   a line on stdout and a `warning` message full of control
//                                          characters (carriage return, escape sequences, bell)
//
// Each is sent from didFinishLaunching, where no SDK frame can interleave with it (the SDK
// answers the callback only once it returns); what was sent is recorded in lifecycle.log.

extension AppDelegate {
    func runWireAttacks(_ behavior: [String: Any]) {
        if let attack = behavior["wireAttack"] as? String { attackControlSocket(attack) }
        if let flood = behavior["flood"] as? String { startFlood(newlines: flood != "noNewline") }
        if let length = behavior["longLine"] as? Int { printLongLine(length) }
        if behavior["terminalEscapes"] as? Bool == true { sendTerminalEscapes() }
    }

    /// Text that would rewrite the host's terminal if it reached it raw.
    private func sendTerminalEscapes() {
        let line = Array("before\r\u{1B}[2Kafter\u{07}\tend\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        sendWhole(AppMessage.warning("title \u{1B}]0;pwned\u{07} done"), "terminalEscapes")
    }

    private func attackControlSocket(_ attack: String) {
        switch attack {
        case "sandboxedWithDescriptor":
            let fd = probe_eventfd(1)  // readable from the start: a listener that always has "news"
            let frame = Framing.frame(WireCoding.encode(AppMessage.sandboxed(listener: true, landlockABI: 0, uid: getuid(), seconds: 0)))
            let sent = frame.withUnsafeBytes { apphost_send_with_fd(3, $0.baseAddress, $0.count, fd) }
            // The eventfd stays open: the host's copy must not become a listener that never drains.
            record("attack sandboxedWithDescriptor: eventfd \(fd), sent \(sent) of \(frame.count) bytes")
        case "descriptorPerByte":
            record("attack descriptorPerByte: " + sendWarningsWithDescriptors(count: 40_000))
        case "hello":
            sendWhole(AppMessage.hello(protocolVersion: wireProtocolVersion, pid: getppid()), attack)
        case "sandboxedAsRoot":
            sendWhole(AppMessage.sandboxed(listener: false, landlockABI: 0, uid: 0, seconds: 0), attack)
        case "logUnknownLevel":
            sendWhole(AppMessage.log(level: "emergency", label: "probe", message: "not a level"), attack)
        case "compactAckOutOfTurn":
            sendWhole(AppMessage.ack(id: 999_999, returned: nil, snapshot: nil), attack)
        case "ackThenNextOutOfTurn":
            // As if willFinishLaunching (callback 1) had returned and didBecomeActive ran next.
            sendWhole(AppMessage.ackThenNext(id: 1), attack)
        case "compactAckTruncated":
            sendBody(WireCoding.encode(AppMessage.ack(id: 7, returned: nil, snapshot: nil)).prefix(5).map { $0 }, attack)
        case "transferTwice":
            let transfer = WireTransfer(session: "forged", task: 7, kind: .download, url: "http://127.0.0.1:9/episode")
            sendWhole(AppMessage.transferCreated(transfer), attack)
            sendWhole(AppMessage.transferCreated(transfer), attack)
        case "transferDeliveredUnsent":
            sendWhole(AppMessage.transferDelivered(session: "forged", task: 1), attack)
        case "transferOfHostFile":
            sendWhole(AppMessage.transferCreated(WireTransfer(session: "forged", task: 1, kind: .upload, url: "http://127.0.0.1:9/upload", file: "/etc/shadow")), attack)
        case "transferWithEscapes":
            let session = "s\u{1b}]0;owned\u{07}\u{1b}[2J\nFAKE ROW"
            sendWhole(AppMessage.transferCreated(WireTransfer(session: session, task: 1, kind: .download, url: "http://127.0.0.1:9/\u{1b}[31mred")), attack)
        default:
            record("attack \(attack): unknown")
        }
    }

    private func sendWhole(_ message: AppMessage, _ attack: String) {
        sendBody(WireCoding.encode(message), attack)
    }

    private func sendBody(_ body: [UInt8], _ attack: String) {
        let frame = Framing.frame(body)
        let sent = frame.withUnsafeBytes { send(3, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        record("attack \(attack): sent \(sent) of \(frame.count) bytes")
    }

    /// Sends `warning` frames one byte at a time, a fresh eventfd on every byte, until `count`
    /// descriptors have gone or the socket fails (the host ended the app). Returns what happened.
    private func sendWarningsWithDescriptors(count: Int) -> String {
        var descriptors = 0
        var frameNumber = 0
        while descriptors < count {
            frameNumber += 1
            let frame = Framing.frame(WireCoding.encode(AppMessage.warning("descriptor flood \(frameNumber)")))
            for byte in frame {
                let fd = probe_eventfd(0)
                guard fd >= 0 else { return "\(descriptors) descriptors sent, then eventfd failed (errno \(-fd))" }
                var sent: Int
                repeat {
                    sent = withUnsafeBytes(of: byte) { apphost_send_with_fd(3, $0.baseAddress, 1, fd) < 0 ? -Int(errno) : 1 }
                    // Too many descriptors in flight (not yet received): wait for the host to read.
                    if sent == -Int(ETOOMANYREFS) || sent == -Int(EAGAIN) { usleep(1000) }
                } while sent == -Int(ETOOMANYREFS) || sent == -Int(EAGAIN) || sent == -Int(EINTR)
                close(fd)
                guard sent == 1 else { return "\(descriptors) descriptors sent, then sendmsg failed (errno \(-sent))" }
                descriptors += 1
            }
        }
        return "\(descriptors) descriptors sent in \(frameNumber) frames"
    }

    /// A background thread that writes to stdout as fast as it can, forever: 16-byte lines, or
    /// the same bytes with no newline. Written 4,096 lines (64 KiB) per write, so that the app
    /// writes faster than the host can read and forward line by line.
    private func startFlood(newlines: Bool) {
        record("flood \(newlines ? "lines" : "noNewline")")
        Thread.detachNewThread {
            let line = Array((newlines ? "flooding stdout\n" : "flooding stdout ").utf8)
            precondition(line.count == 16)
            let chunk = Array([[UInt8]](repeating: line, count: 4096).joined())
            while true {
                _ = chunk.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            }
        }
    }

    private func printLongLine(_ length: Int) {
        // Letters in a repeating pattern, so that a piece lost, doubled or reordered shows.
        let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        var bytes = (0..<(length - 1)).map { letters[$0 % letters.count] }
        bytes.append(UInt8(ascii: "\n"))
        bytes += Array("long line done\n".utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 { break }
            offset += written
        }
        record("long line \(length) written")
    }
}
