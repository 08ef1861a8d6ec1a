/// Text from an app shown on a terminal: its output and whatever it put in an event (a warning,
/// a launch failure, a snapshot). Control characters are shown escaped, so an app cannot move the
/// cursor, rewrite earlier lines or send escape sequences to the terminal of the person running
/// the host; tabs are kept. JSON output needs none of this (JSON escapes them itself).
public enum TerminalText {
    /// `bytes` with every control character but tab shown as `\r`, `\e`, `\x07`…
    public static func escaping(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(bytes.underestimatedCount)
        for byte in bytes {
            switch byte {
            case 0x09, 0x20...0x7e, 0x80...:
                escaped.append(byte)
            case 0x0a: escaped += Array(#"\n"#.utf8)
            case 0x0d: escaped += Array(#"\r"#.utf8)
            case 0x1b: escaped += Array(#"\e"#.utf8)
            default:
                let hex = Array("0123456789abcdef".utf8)
                escaped += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 0xf)]]
            }
        }
        return escaped
    }

    /// `text` with every control character but tab escaped.
    public static func escaping(_ text: String) -> String {
        String(decoding: escaping(text.utf8), as: UTF8.self)
    }
}
