import Foundation

/// The test server's resources behind authentication (docs/transfers.md, "Background transfers"):
///   GET /basic/SIZE     401 with `WWW-Authenticate: Basic realm="episodes"` unless the request
///                       has Basic credentials ada:lovelace, then the resource as /slow/SIZE
///                       sends it (64 KiB pieces 50 ms apart: an app suspended after answering
///                       is surely suspended before it ends)
///   GET /digest/SIZE    the same with Digest (RFC 7616, MD5, qop auth), checked against the
///                       credential ada:lovelace
/// The 401's body is "who are you?". Each request is recorded with what authenticated it:
/// "GET /basic/1000 auth=none", "auth=wrong", "auth=ok".
extension TransferServer {
    static let user = "ada"
    static let password = "lovelace"
    static let realm = "episodes"
    static let nonce = "6f7a2c1e9b"

    /// Whether the request's Authorization answers the resource's scheme with ada:lovelace;
    /// nil when it has none.
    static func authenticated(scheme: String, method: String, target: String, authorization: String?) -> Bool? {
        guard let authorization else { return nil }
        if scheme == "basic" {
            guard authorization.hasPrefix("Basic "), let decoded = Data(base64Encoded: String(authorization.dropFirst(6))) else { return false }
            return String(decoding: decoded, as: UTF8.self) == "\(user):\(password)"
        }
        guard authorization.hasPrefix("Digest ") else { return false }
        let fields = digestFields(String(authorization.dropFirst(7)))
        guard fields["username"] == user, fields["realm"] == realm, fields["nonce"] == nonce, fields["uri"] == target,
              let cnonce = fields["cnonce"], let count = fields["nc"], fields["qop"] == "auth", let response = fields["response"]
        else { return false }
        let first = MD5.hex("\(user):\(realm):\(password)")
        let second = MD5.hex("\(method):\(target)")
        return response == MD5.hex("\(first):\(nonce):\(count):\(cnonce):auth:\(second)")
    }

    /// The challenge header of a 401 for the scheme.
    static func challenge(scheme: String) -> String {
        scheme == "basic"
            ? "Basic realm=\"\(realm)\""
            : "Digest realm=\"\(realm)\", qop=\"auth\", nonce=\"\(nonce)\", opaque=\"0a1b\", algorithm=MD5"
    }

    /// `name="value", name=value` pairs.
    private static func digestFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = Substring(text)
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = rest[..<end]
                rest = end < rest.endIndex ? rest[rest.index(after: end)...] : ""
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            fields[name.lowercased()] = String(value).trimmingCharacters(in: .whitespaces)
        }
        return fields
    }
}

/// MD5 (RFC 1321), for the server's Digest check: Foundation on Linux has none.
enum MD5 {
    private static let shifts: [UInt32] = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]
    private static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296)) }

    static func hex(_ text: String) -> String {
        digest(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func digest(_ input: [UInt8]) -> [UInt8] {
        var message = input + [0x80]
        while message.count % 64 != 56 { message.append(0) }
        let bits = UInt64(input.count) * 8
        message += (0..<8).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) }
        var state: [UInt32] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476]
        for chunk in stride(from: 0, to: message.count, by: 64) {
            let words = (0..<16).map { index in
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(message[chunk + index * 4 + $1]) << (8 * $1) }
            }
            var (a, b, c, d) = (state[0], state[1], state[2], state[3])
            for round in 0..<64 {
                var f: UInt32
                let g: Int
                switch round {
                case 0..<16: (f, g) = ((b & c) | (~b & d), round)
                case 16..<32: (f, g) = ((d & b) | (~d & c), (5 * round + 1) % 16)
                case 32..<48: (f, g) = (b ^ c ^ d, (3 * round + 5) % 16)
                default: (f, g) = (c ^ (b | ~d), (7 * round) % 16)
                }
                f = f &+ a &+ constants[round] &+ words[g]
                a = d
                d = c
                c = b
                let shift = shifts[(round / 16) * 4 + round % 4]
                b = b &+ ((f << shift) | (f >> (32 - shift)))
            }
            state = [state[0] &+ a, state[1] &+ b, state[2] &+ c, state[3] &+ d]
        }
        return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }
}
