#if canImport(Glibc)
import Glibc
#endif
import AppHostSystem

/// The file-backed mappings of a process (/proc/PID/maps), read by the host while the process
/// exists: what names the images of a backtrace's addresses. The kernel wrote it, not the app.
struct MemoryMap: Sendable, Equatable {
    struct Region: Sendable, Equatable {
        var start: UInt64
        var end: UInt64
        /// The offset in the file of `start`.
        var offset: UInt64
        var inode: UInt64
        var path: String
        var isExecutable: Bool
    }

    var regions: [Region]

    /// At most this much of the maps file is read (a Swift process has some 300 lines).
    static let maximumBytes = 4 << 20

    /// Reads /proc/PID/maps; what went wrong, for the report, if it cannot.
    static func read(pid: pid_t) -> Result<MemoryMap, MemoryMapError> {
        let path = "/proc/\(pid)/maps"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(MemoryMapError(what: "cannot read \(path): \(errnoText(errno))")) }
        defer { closeIgnoringErrors(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count < maximumBytes, case .bytes(let count) = readSome(fd, into: &buffer) { bytes += buffer[0..<count] }
        // A process that has ended (a zombie) has no mappings left to show.
        guard !bytes.isEmpty else { return .failure(MemoryMapError(what: "\(path) was empty: the app process had ended")) }
        return .success(MemoryMap(parsing: bytes))
    }

    /// Parses the maps format: `start-end perms offset dev inode path`.
    init(parsing bytes: [UInt8]) {
        regions = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { continue }
            let range = fields[0].split(separator: UInt8(ascii: "-"))
            let path = String(decoding: fields[5].drop { $0 == UInt8(ascii: " ") }, as: UTF8.self)
            guard range.count == 2, path.hasPrefix("/"),
                  let start = UInt64(String(decoding: range[0], as: UTF8.self), radix: 16),
                  let end = UInt64(String(decoding: range[1], as: UTF8.self), radix: 16),
                  let offset = UInt64(String(decoding: fields[2], as: UTF8.self), radix: 16),
                  let inode = UInt64(String(decoding: fields[4], as: UTF8.self)), start < end
            else { continue }
            regions.append(Region(
                start: start, end: end, offset: offset, inode: inode, path: path,
                isExecutable: fields[1].count > 2 && fields[1][fields[1].startIndex + 2] == UInt8(ascii: "x")))
        }
    }

    /// The region holding `address`.
    func region(containing address: UInt64) -> Region? {
        regions.first { $0.start <= address && address < $0.end }
    }
}

struct MemoryMapError: Error, Sendable, Equatable {
    var what: String
}
