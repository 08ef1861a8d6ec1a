#if canImport(Glibc)
import Glibc
#endif

/// Where the host's background transfers may connect (docs/transfers.md, "Background transfers"). The
/// host makes the connection for the app, from outside its sandbox: without a rule it would
/// reach what the app itself cannot (a service on the host's loopback, a link-local metadata
/// endpoint, the local network). So loopback, link-local, private, unspecified, multicast and
/// reserved addresses are refused unless named here (`--allow-transfers-to`, for tests against
/// a local server). The transfer engine asks at every connection, with the address it is about
/// to connect to (after the name was resolved, and again after every redirect): a name that
/// resolves to a refused address is refused whatever its name says.
package struct TransferDestinations: Sendable, Equatable {
    /// An address allowed although local, on one port or on every port.
    package struct Allowance: Sendable, Equatable {
        /// 4 bytes (IPv4) or 16 (IPv6).
        package var address: [UInt8]
        package var port: UInt16?
    }

    package var allowed: [Allowance] = []

    package init(allowed: [Allowance] = []) {
        self.allowed = allowed
    }

    /// Parses `--allow-transfers-to` values: `127.0.0.1`, `127.0.0.1:8080`, `::1`, `[::1]:8080`.
    package init(parsing values: [String]) throws(DestinationError) {
        for value in values {
            allowed.append(try Self.allowance(value))
        }
    }

    package struct DestinationError: Error, CustomStringConvertible {
        package var description: String
    }

    /// nil: the transfer may connect to `address` (4 or 16 bytes) on `port`; else why not, as
    /// "127.0.0.1 is a loopback address".
    package func refusal(address: [UInt8], port: UInt16) -> String? {
        guard let kind = Self.kind(of: address) else { return nil }
        if allowed.contains(where: { $0.address == address && ($0.port == nil || $0.port == port) }) { return nil }
        return "\(Self.text(address)) is \(kind) address"
    }

    /// What makes an address local ("a loopback"), or nil for a public one.
    static func kind(of address: [UInt8]) -> String? {
        if address.count == 16 {
            let prefix = address.prefix(12)
            // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) addresses are judged as IPv4.
            if prefix.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) { return kind(of: Array(address.suffix(4))) }
            if address.allSatisfy({ $0 == 0 }) { return "an unspecified" }
            if address.prefix(15).allSatisfy({ $0 == 0 }) && address[15] == 1 { return "a loopback" }
            if prefix.allSatisfy({ $0 == 0 }) { return kind(of: Array(address.suffix(4))) }
            if address[0] == 0xfe && address[1] & 0xc0 == 0x80 { return "a link-local" }
            if address[0] & 0xfe == 0xfc { return "a private (unique local)" }
            if address[0] == 0xff { return "a multicast" }
            return nil
        }
        guard address.count == 4 else { return "an unknown" }
        let (a, b) = (address[0], address[1])
        switch a {
        case 0: return "an unspecified"
        case 127: return "a loopback"
        case 10: return "a private"
        case 172 where b & 0xf0 == 16: return "a private"
        case 192 where b == 168: return "a private"
        case 100 where b & 0xc0 == 64: return "a shared (carrier-grade NAT)"
        case 169 where b == 254: return "a link-local"
        case 224...239: return "a multicast"
        case 240...255: return "a reserved"
        default: return nil
        }
    }

    /// "127.0.0.1", "::1".
    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let written = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return address.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func allowance(_ value: String) throws(DestinationError) -> Allowance {
        var host = Substring(value)
        var port: UInt16?
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = UInt16(rest.dropFirst()) else { throw DestinationError(description: "\(value): not ADDRESS or ADDRESS:PORT") }
                port = number
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            guard let number = UInt16(host[host.index(after: colon)...]) else { throw DestinationError(description: "\(value): not ADDRESS or ADDRESS:PORT") }
            port = number
            host = host[..<colon]
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(host), &v4) == 1 {
            return Allowance(address: withUnsafeBytes(of: v4) { Array($0) }, port: port)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(host), &v6) == 1 {
            return Allowance(address: withUnsafeBytes(of: v6) { Array($0) }, port: port)
        }
        throw DestinationError(description: "\(value): not an IP address (a name could resolve anywhere; give 127.0.0.1, ::1 or another address, with :PORT if you like)")
    }
}
