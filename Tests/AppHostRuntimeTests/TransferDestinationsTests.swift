import Testing
@testable import AppHostRuntime

/// Which addresses a background transfer may connect to (TransferDestinations).
struct TransferDestinationsTests {
    let rules = TransferDestinations()

    func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> [UInt8] { [a, b, c, d] }

    func v6(_ prefix: [UInt8], last: UInt8 = 1) -> [UInt8] { prefix + [UInt8](repeating: 0, count: 15 - prefix.count) + [last] }

    @Test func localAddressesAreRefusedWithWhatTheyAre() {
        #expect(rules.refusal(address: v4(127, 0, 0, 1), port: 80) == "127.0.0.1 is a loopback address")
        #expect(rules.refusal(address: v4(127, 9, 9, 9), port: 80) == "127.9.9.9 is a loopback address")
        #expect(rules.refusal(address: v4(10, 1, 2, 3), port: 80) == "10.1.2.3 is a private address")
        #expect(rules.refusal(address: v4(172, 16, 0, 1), port: 80) == "172.16.0.1 is a private address")
        #expect(rules.refusal(address: v4(172, 31, 255, 1), port: 80) == "172.31.255.1 is a private address")
        #expect(rules.refusal(address: v4(192, 168, 1, 1), port: 80) == "192.168.1.1 is a private address")
        #expect(rules.refusal(address: v4(169, 254, 169, 254), port: 80) == "169.254.169.254 is a link-local address")
        #expect(rules.refusal(address: v4(100, 64, 0, 1), port: 80) == "100.64.0.1 is a shared (carrier-grade NAT) address")
        #expect(rules.refusal(address: v4(0, 0, 0, 0), port: 80) == "0.0.0.0 is an unspecified address")
        #expect(rules.refusal(address: v4(224, 0, 0, 1), port: 80) == "224.0.0.1 is a multicast address")
        #expect(rules.refusal(address: v4(255, 255, 255, 255), port: 80) == "255.255.255.255 is a reserved address")
        #expect(rules.refusal(address: v6([]), port: 80) == "::1 is a loopback address")
        #expect(rules.refusal(address: v6([], last: 0), port: 80) == ":: is an unspecified address")
        #expect(rules.refusal(address: v6([0xfe, 0x80]), port: 80) == "fe80::1 is a link-local address")
        #expect(rules.refusal(address: v6([0xfd, 0x12]), port: 80) == "fd12::1 is a private (unique local) address")
        #expect(rules.refusal(address: v6([0xff, 0x02]), port: 80) == "ff02::1 is a multicast address")
    }

    /// An IPv4 address written as IPv6 is judged as the IPv4 address it is.
    @Test func mappedAddressesAreJudgedAsIPv4() {
        let mapped = [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 127, 0, 0, 1]
        #expect(rules.refusal(address: mapped, port: 80) == "::ffff:127.0.0.1 is a loopback address")
        let compatible = [UInt8](repeating: 0, count: 12) + [10, 0, 0, 1]
        #expect(rules.refusal(address: compatible, port: 80)?.hasSuffix("is a private address") == true)
    }

    @Test func publicAddressesAreAllowed() {
        #expect(rules.refusal(address: v4(93, 184, 215, 14), port: 443) == nil)
        #expect(rules.refusal(address: v4(172, 32, 0, 1), port: 443) == nil)
        #expect(rules.refusal(address: v4(100, 128, 0, 1), port: 443) == nil)
        #expect(rules.refusal(address: v6([0x26, 0x06, 0x28, 0x00]), port: 443) == nil)
    }

    /// `--allow-transfers-to` names an address, on every port or on one.
    @Test func anAllowedAddressIsAllowedOnItsPort() throws {
        let allowed = try TransferDestinations(parsing: ["127.0.0.1:8080", "::1", "[fe80::1]:443"])
        #expect(allowed.refusal(address: v4(127, 0, 0, 1), port: 8080) == nil)
        #expect(allowed.refusal(address: v4(127, 0, 0, 1), port: 8081) == "127.0.0.1 is a loopback address")
        #expect(allowed.refusal(address: v4(127, 0, 0, 2), port: 8080) == "127.0.0.2 is a loopback address")
        #expect(allowed.refusal(address: v6([]), port: 1) == nil)
        #expect(allowed.refusal(address: v6([0xfe, 0x80]), port: 443) == nil)
        #expect(allowed.refusal(address: v6([0xfe, 0x80]), port: 80) == "fe80::1 is a link-local address", "allowed on port 443 only")
    }

    @Test func aNameOrGarbageIsNotAnAllowance() {
        for bad in ["localhost", "127.0.0.1:http", "[::1", "1.2.3.4.5", ""] {
            #expect(throws: TransferDestinations.DestinationError.self, "\(bad)") { try TransferDestinations(parsing: [bad]) }
        }
    }
}
