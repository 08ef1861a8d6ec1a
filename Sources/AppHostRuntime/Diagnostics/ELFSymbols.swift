#if canImport(Glibc)
import Glibc
#endif
import AppHostSystem

/// The function symbols of one 64-bit little-endian ELF file (x86_64, aarch64), for naming the
/// addresses of a backtrace.
///
/// The file is one an app process had mapped, so it may be the app's own and hostile: every
/// offset and count is checked against the file and against caps, and the file is read with
/// `pread`, never mapped (a file the app can write could shrink under a mapping, and the host
/// would die of SIGBUS reading it).
final class ELFSymbols {
    struct Segment {
        var fileOffset: UInt64
        var address: UInt64
        var size: UInt64
    }

    struct Table {
        /// The raw entries (24 bytes each).
        var entries: [UInt8]
        var stringsOffset: UInt64
        var stringsSize: UInt64
    }

    struct Symbol: Equatable {
        var name: String
        /// The symbol's address in the file's own address space (st_value).
        var start: UInt64
    }

    private let fd: Int32
    private let fileSize: UInt64
    private var segments: [Segment] = []
    /// .symtab first (all functions, where the file is not stripped), then .dynsym (exported).
    private var tables: [Table] = []

    /// Caps on what one file may make the host read.
    static let maximumTableBytes: UInt64 = 16 << 20
    static let maximumSections = 4096
    static let maximumSegments = 256
    static let maximumNameLength = 4096

    /// Opens `path` if it is a regular ELF file with this inode (the file the process mapped,
    /// not whatever is at the path now); nil otherwise. Its symbol tables are read whole, each
    /// only if it fits in what is left of `budget` (bytes), which shrinks by what was read.
    init?(path: String, inode: UInt64, budget: inout Int) {
        // O_NONBLOCK: a FIFO put at the path must not block the host's open.
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, UInt64(info.st_ino) == inode else {
            closeIgnoringErrors(fd)
            return nil
        }
        fileSize = UInt64(info.st_size)
        guard readHeaders(budget: &budget) else {
            closeIgnoringErrors(fd)
            return nil
        }
    }

    deinit { closeIgnoringErrors(fd) }

    /// The address in the file's address space of the byte at `offset` in the file.
    func address(ofFileOffset offset: UInt64) -> UInt64? {
        guard let segment = segments.first(where: { $0.fileOffset <= offset && offset - $0.fileOffset < $0.size }) else { return nil }
        return segment.address &+ (offset - segment.fileOffset)
    }

    /// The function symbol holding each address (in the file's address space), in one pass over
    /// each table: `.symtab`, then `.dynsym` for what it did not name.
    func symbols(at addresses: [UInt64]) -> [Symbol?] {
        var found = [(start: UInt64, nameOffset: UInt32, table: Int)?](repeating: nil, count: addresses.count)
        for (tableIndex, table) in tables.enumerated() where found.contains(where: { $0 == nil }) {
            table.entries.withUnsafeBytes { raw in
                let count = raw.count / 24
                for entry in 0..<count {
                    let base = entry * 24
                    let info = raw[base + 4]
                    let type = info & 0xf
                    // STT_FUNC, STT_GNU_IFUNC; defined (a section index).
                    guard type == 2 || type == 10, raw.loadUnaligned(fromByteOffset: base + 6, as: UInt16.self) != 0 else { continue }
                    let value = raw.loadUnaligned(fromByteOffset: base + 8, as: UInt64.self)
                    let size = raw.loadUnaligned(fromByteOffset: base + 16, as: UInt64.self)
                    guard size > 0 else { continue }
                    for (index, address) in addresses.enumerated() where found[index] == nil && value <= address && address - value < size {
                        found[index] = (value, raw.loadUnaligned(fromByteOffset: base, as: UInt32.self), tableIndex)
                    }
                }
            }
        }
        return found.map { hit in
            guard let hit, let name = name(at: hit.nameOffset, in: tables[hit.table]) else { return nil }
            return Symbol(name: name, start: hit.start)
        }
    }

    // MARK: Reading

    private func read(_ count: Int, at offset: UInt64) -> [UInt8]? {
        guard count >= 0, offset <= fileSize, UInt64(count) <= fileSize - offset else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }

    private func readHeaders(budget: inout Int) -> Bool {
        guard let header = read(64, at: 0),
              header[0] == 0x7f, header[1] == UInt8(ascii: "E"), header[2] == UInt8(ascii: "L"), header[3] == UInt8(ascii: "F"),
              header[4] == 2, header[5] == 1  // ELFCLASS64, little-endian
        else { return false }
        func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) } }
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 { bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
        func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) } }

        let programOffset = u64(header, 32), programSize = Int(u16(header, 54)), programCount = Int(u16(header, 56))
        guard programSize >= 56, programCount <= Self.maximumSegments else { return false }
        if let table = read(programSize * programCount, at: programOffset) {
            for index in 0..<programCount {
                let base = index * programSize
                guard u32(table, base) == 1 else { continue }  // PT_LOAD
                segments.append(Segment(fileOffset: u64(table, base + 8), address: u64(table, base + 16), size: u64(table, base + 32)))
            }
        }
        let sectionOffset = u64(header, 40), sectionSize = Int(u16(header, 58)), sectionCount = Int(u16(header, 60))
        guard sectionSize >= 64, sectionCount <= Self.maximumSections, let sections = read(sectionSize * sectionCount, at: sectionOffset) else {
            return !segments.isEmpty
        }
        for wanted in [UInt32(2), 11] {  // SHT_SYMTAB, SHT_DYNSYM
            for index in 0..<sectionCount where u32(sections, index * sectionSize + 4) == wanted {
                let base = index * sectionSize
                let offset = u64(sections, base + 24), size = u64(sections, base + 32), link = Int(u32(sections, base + 40))
                guard size <= Self.maximumTableBytes, size <= UInt64(max(budget, 0)), link < sectionCount,
                      let entries = read(Int(size), at: offset) else { continue }
                budget -= Int(size)
                let strings = link * sectionSize
                tables.append(Table(entries: entries, stringsOffset: u64(sections, strings + 24), stringsSize: u64(sections, strings + 32)))
                break
            }
        }
        return !segments.isEmpty
    }

    private func name(at offset: UInt32, in table: Table) -> String? {
        let (start, overflow) = table.stringsOffset.addingReportingOverflow(UInt64(offset))
        guard UInt64(offset) < table.stringsSize, !overflow, start < fileSize else { return nil }
        let count = min(UInt64(Self.maximumNameLength), table.stringsSize - UInt64(offset), fileSize - start)
        guard let bytes = read(Int(count), at: start) else { return nil }
        let name = bytes.prefix { $0 != 0 }
        return name.isEmpty ? nil : String(decoding: name, as: UTF8.self)
    }
}
