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

    package static func entries() -> [Entry] {
        readSmallFile("/proc/self/mountinfo").split(separator: "\n").compactMap { line in
            // "36 27 254:0 / /var rw,relatime shared:1 - ext4 /dev/vda rw,prjquota": optional
            // fields, then "-", then the type, the source and the super block's options.
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash >= 5, fields.count >= dash + 4 else { return nil }
            let numbers = fields[2].split(separator: ":")
            guard numbers.count == 2, let major = UInt32(numbers[0]), let minor = UInt32(numbers[1]) else { return nil }
            return Entry(
                device: device(major: major, minor: minor), major: major, minor: minor, mountPoint: unescape(fields[4]),
                type: String(fields[dash + 1]), source: unescape(fields[dash + 2]),
                superOptions: fields[dash + 3].split(separator: ",").map(String.init))
        }
    }

    /// glibc's makedev.
    static func device(major: UInt32, minor: UInt32) -> UInt64 {
        let major = UInt64(major), minor = UInt64(minor)
        return (major & 0xFFFF_F000) << 32 | (major & 0xFFF) << 8 | (minor & 0xFFFF_FF00) << 12 | (minor & 0xFF)
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes (\040).
    package static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "\\"), rest.count >= 3, let value = UInt8(String(decoding: rest.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                rest = rest.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
