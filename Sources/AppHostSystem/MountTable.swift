#if canImport(Glibc)
import Glibc
#endif

/// The calling process's mounts, from /proc/self/mountinfo.
package enum MountTable {
    package struct Entry: Equatable, Sendable {
        /// The mounted file system's device, as stat(2) reports st_dev.
        package var device: UInt64
        package var major: UInt32
        package var minor: UInt32
        package var mountPoint: String
        package var type: String
        package var source: String
        package var superOptions: [String]
    }

    /// Parsed as bytes: String's character-level splitting costs half a millisecond cold, in a
    /// freshly started runner.
    package static func entries() -> [Entry] {
        let bytes = Array(readSmallFile("/proc/self/mountinfo").utf8)
        return bytes.split(separator: UInt8(ascii: "\n")).compactMap { line in
            // "36 27 254:0 / /var rw,relatime shared:1 - ext4 /dev/vda rw,prjquota": optional
            // fields, then "-", then the type, the source and the super block's options.
            let fields = line.split(separator: UInt8(ascii: " "))
            guard let dash = fields.firstIndex(where: { $0.elementsEqual([UInt8(ascii: "-")]) }), dash >= 5, fields.count >= dash + 4 else {
                return nil
            }
            let numbers = fields[2].split(separator: UInt8(ascii: ":"))
            guard numbers.count == 2, let major = number(numbers[0]), let minor = number(numbers[1]) else { return nil }
            return Entry(
                device: device(major: major, minor: minor), major: major, minor: minor, mountPoint: unescape(fields[4]),
                type: String(decoding: fields[dash + 1], as: UTF8.self), source: unescape(fields[dash + 2]),
                superOptions: fields[dash + 3].split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) })
        }
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> UInt32? {
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value &* 10 &+ UInt32(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// glibc's makedev.
    static func device(major: UInt32, minor: UInt32) -> UInt64 {
        let major = UInt64(major), minor = UInt64(minor)
        return (major & 0xFFFF_F000) << 32 | (major & 0xFFF) << 8 | (minor & 0xFFFF_FF00) << 12 | (minor & 0xFF)
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes (\040).
    package static func unescape(_ field: Substring) -> String { unescape(ArraySlice(field.utf8)) }

    static func unescape(_ field: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.count)
        var index = field.startIndex
        while index < field.endIndex {
            let byte = field[index]
            if byte == UInt8(ascii: "\\"), field.endIndex - index >= 4,
               case let digits = field[(index + 1)...(index + 3)], digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                bytes.append(digits.reduce(0) { $0 &* 8 &+ ($1 - UInt8(ascii: "0")) })
                index += 4
            } else {
                bytes.append(byte)
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
