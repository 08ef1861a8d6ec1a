import CAppHostCrash
import Foundation
import Glibc
import Testing
@testable import AppHostRuntime

/// The host's side of backtraces: what it accepts from an app process's diagnostics socket,
/// and how it names addresses, against this test process's own memory and hostile files.
@Suite struct BacktraceSymbolizationTests {
    private func datagram(frames: [UInt64], kind: UInt32 = UInt32(APPHOST_CRASH_KIND_CRASH.rawValue), name: String = "Notes") -> [UInt8] {
        var record = apphost_crash_record()
        record.magic = APPHOST_CRASH_MAGIC
        record.kind = kind
        record.signal = SIGSEGV
        record.thread = 2
        record.is_main = 1
        record.unwinder = UInt32(APPHOST_CRASH_UNWINDER_TABLES.rawValue)
        record.frame_count = UInt32(frames.count)
        withUnsafeMutableBytes(of: &record.thread_name) { raw in
            for (index, byte) in name.utf8.prefix(15).enumerated() { raw[index] = byte }
        }
        withUnsafeMutableBytes(of: &record.frames) { raw in
            for (index, frame) in frames.prefix(Int(APPHOST_CRASH_MAXIMUM_FRAMES)).enumerated() {
                raw.storeBytes(of: frame, toByteOffset: index * 8, as: UInt64.self)
            }
        }
        return withUnsafeBytes(of: record) { Array($0) }
    }

    @Test func aRecordIsAcceptedOnlyWholeAndWellFormed() throws {
        let good = datagram(frames: [1, 2, 3], name: "Bad\u{1b}[2J")
        let record = try #require(CrashRecord(datagram: good[...]))
        #expect(record.frames == [1, 2, 3])
        #expect(record.threadName == #"Bad\e[2J"#, "control characters of the app's thread name are escaped")
        #expect(CrashRecord(datagram: good.dropLast()) == nil)
        var wrongMagic = good
        wrongMagic[0] ^= 0xff
        #expect(CrashRecord(datagram: wrongMagic[...]) == nil)
        #expect(CrashRecord(datagram: datagram(frames: [1], kind: 7)[...]) == nil)
        var tooManyFrames = good
        let countOffset = MemoryLayout<apphost_crash_record>.offset(of: \.frame_count)!
        tooManyFrames.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(APPHOST_CRASH_MAXIMUM_FRAMES) + 1, toByteOffset: countOffset, as: UInt32.self) }
        #expect(CrashRecord(datagram: tooManyFrames[...]) == nil)
    }

    @Test func framesAreNamedFromTheMemoryMapAndTheImagesSymbolTables() throws {
        let retain = try #require(dlsym(dlopen(nil, RTLD_NOW), "swift_retain"))
        let address = UInt64(UInt(bitPattern: retain))
        let record = try #require(CrashRecord(datagram: datagram(frames: [address + 4, address + 9, 16])[...]))
        let capture = BacktraceCapture(record: record, map: MemoryMap.read(pid: getpid()))
        let backtrace = Symbolizer.backtrace(capture, role: "crashed", bundlePath: "/nowhere.app", appPaths: [])
        #expect(backtrace.frames.count == 3)
        let top = backtrace.frames[0]
        #expect(top.symbol == "swift_retain")
        #expect(top.symbolOffset == 4)
        #expect(top.image == "libswiftCore.so")
        #expect(top.isApp == false)
        // A return address is named by the call before it, and printed as itself.
        #expect(backtrace.frames[1].symbol == "swift_retain")
        #expect(backtrace.frames[1].symbolOffset == 9)
        // An address nothing maps is kept, unnamed.
        #expect(backtrace.frames[2].image == "???")
        #expect(backtrace.frames[2].symbol == nil)
        #expect(backtrace.imagesUnavailable == nil)
    }

    @Test func withoutTheMemoryMapTheFramesKeepTheirAddressesAndSayWhy() throws {
        let record = try #require(CrashRecord(datagram: datagram(frames: [0x1234])[...]))
        let capture = BacktraceCapture(record: record, map: .failure(MemoryMapError(what: "the app process had ended")))
        let backtrace = Symbolizer.backtrace(capture, role: "crashed", bundlePath: "/nowhere.app", appPaths: [])
        #expect(backtrace.frames.map(\.address) == ["0x0000000000001234"])
        #expect(backtrace.imagesUnavailable == "the app process had ended")
    }

    @Test func filesThatAreNotELFImagesAreNotRead() throws {
        var budget = 1 << 20
        var info = stat()
        // A device, a FIFO (which must not block the host), garbage, and an ELF header that
        // claims more sections than the file holds.
        stat("/dev/zero", &info)
        #expect(ELFSymbols(path: "/dev/zero", inode: UInt64(info.st_ino), budget: &budget) == nil)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("elf-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        mkfifo(fifo, 0o600)
        stat(fifo, &info)
        #expect(ELFSymbols(path: fifo, inode: UInt64(info.st_ino), budget: &budget) == nil)
        let garbage = directory.appendingPathComponent("garbage")
        try Data(repeating: 0x41, count: 4096).write(to: garbage)
        stat(garbage.path, &info)
        #expect(ELFSymbols(path: garbage.path, inode: UInt64(info.st_ino), budget: &budget) == nil)
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<6, with: [0x7f, 0x45, 0x4c, 0x46, 2, 1])
        header.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt64.max - 10, toByteOffset: 32, as: UInt64.self)  // program headers far past the end
            raw.storeBytes(of: UInt16(56), toByteOffset: 54, as: UInt16.self)
            raw.storeBytes(of: UInt16(200), toByteOffset: 56, as: UInt16.self)
            raw.storeBytes(of: UInt64(64), toByteOffset: 40, as: UInt64.self)
            raw.storeBytes(of: UInt16(64), toByteOffset: 58, as: UInt16.self)
            raw.storeBytes(of: UInt16(4000), toByteOffset: 60, as: UInt16.self)
        }
        let lying = directory.appendingPathComponent("lying.so")
        try Data(header).write(to: lying)
        stat(lying.path, &info)
        #expect(ELFSymbols(path: lying.path, inode: UInt64(info.st_ino), budget: &budget) == nil)
        // The file at the path is not the one mapped (another inode): not read.
        #expect(ELFSymbols(path: "/proc/self/exe", inode: 1, budget: &budget) == nil)
    }

    @Test func swiftNamesAreDemangledAsCrashReportsShowThem() {
        #expect(Symbolizer.demangled("$s12ProbeFixture11AppDelegateC5crash33_C634A96480C51D21CBFF6E0B386002E9LLyyF") == "ProbeFixture.AppDelegate.crash()")
        #expect(Symbolizer.demangled("$s5Notes11AppDelegateC4saveyyF") == "Notes.AppDelegate.save()")
        #expect(Symbolizer.demangled("malloc") == "malloc")
        #expect(Symbolizer.demangled("$sNotASwiftName!!") == "$sNotASwiftName!!")
    }

    @Test func theRuntimesFatalMessagesAreRecognised() {
        for line in [
            "Notes/AppDelegate.swift:42: Fatal error: Unexpectedly found nil while unwrapping an Optional value",
            "Swift/ContiguousArrayBuffer.swift:691: Fatal error: Index out of range",
            "Notes/AppDelegate.swift:7: Precondition failed: count > 0",
        ] {
            #expect(OutputForwarder.isFatalMessage(Array(line.utf8)), "\(line)")
        }
        #expect(!OutputForwarder.isFatalMessage(Array("saved 3 notes".utf8)))
    }
}
