#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A backtrace record as the host received it, with the memory map it read right then.
struct BacktraceCapture: Sendable {
    var record: CrashRecord
    var map: Result<MemoryMap, MemoryMapError>
}

/// Names the frames of a backtrace: the image of each address from the memory map, the
/// function from the image's symbol tables, demangled where it is Swift. Runs in the host, on
/// files the app had mapped (ELFSymbols reads them defensively), once per report.
enum Symbolizer {
    /// At most this many distinct images, and this many bytes of their symbol tables, are read
    /// for one backtrace (the Swift runtime's .symtab is under 1 MiB).
    static let maximumImages = 16
    static let maximumBytesRead = 64 << 20

    /// `appPaths`: the files of the app's bundle (its plugin, resolved), whose frames are the app's.
    static func backtrace(_ capture: BacktraceCapture, role: String, bundlePath: String, appPaths: Set<String>) -> TerminationReport.Backtrace {
        let record = capture.record
        let map = try? capture.map.get()
        // Frame 0 is the interrupted instruction; the others are return addresses, named by the
        // call before them (a call to a function that never returns may end its caller).
        let lookups = record.frames.enumerated().map { index, address in index == 0 ? address : address &- 1 }
        let regions = lookups.map { map?.region(containing: $0) }
        var framesByImage: [String: [Int]] = [:]
        for (index, region) in regions.enumerated() {
            if let region { framesByImage[region.path, default: []].append(index) }
        }
        var symbols = [ELFSymbols.Symbol?](repeating: nil, count: lookups.count)
        var imageAddresses = [UInt64?](repeating: nil, count: lookups.count)
        // One image at a time, each released before the next is read, within a budget of bytes
        // for the whole backtrace: an app can map many large files of its own making.
        var budget = maximumBytesRead
        for (path, indices) in framesByImage.sorted(by: { $0.value[0] < $1.value[0] }).prefix(maximumImages) {
            guard let region = regions[indices[0]], let image = ELFSymbols(path: path, inode: region.inode, budget: &budget) else { continue }
            var wanted: [(frame: Int, address: UInt64)] = []
            for index in indices {
                guard let frameRegion = regions[index],
                      let address = image.address(ofFileOffset: lookups[index] - frameRegion.start &+ frameRegion.offset) else { continue }
                wanted.append((index, address))
            }
            for (hit, entry) in zip(image.symbols(at: wanted.map(\.address)), wanted) {
                symbols[entry.frame] = hit
                // The frame's own address in the image (a return address, not the call before it).
                imageAddresses[entry.frame] = entry.address &+ (entry.frame == 0 ? 0 : 1)
            }
        }
        let frames = record.frames.enumerated().map { index, address in
            let region = regions[index]
            let path = region?.path
            let image = path.map { ($0 as NSString).lastPathComponent } ?? "???"
            let isApp = path.map { appPaths.contains($0) || $0.hasPrefix(bundlePath + "/") } ?? false
            var symbol: String?
            var offset: UInt64?
            if let hit = symbols[index], let imageAddress = imageAddresses[index] {
                symbol = demangled(hit.name)
                // The offset of the address itself (not of the call before it), as crash reports
                // print it. Wrapping: a hostile image's addresses may be anything.
                offset = imageAddress &- hit.start
            }
            let hex = "0x" + String(address, radix: 16).leftPadded(to: 16)
            let location = symbol.map { "\($0) + \(offset ?? 0)" }
                ?? imageAddresses[index].map { "\(image) + 0x\(String($0, radix: 16))" }
                ?? region.map { "\(image) + 0x\(String(address &- $0.start &+ $0.offset, radix: 16))" } ?? hex
            return TerminationReport.Backtrace.Frame(
                index: index, image: image, imagePath: path, address: hex,
                imageAddress: imageAddresses[index].map { "0x" + String($0, radix: 16) }, symbol: symbol, symbolOffset: offset,
                isApp: isApp, line: "\(index)  \(image)  \(hex)  \(location)")
        }
        var imagesUnavailable: String?
        if case .failure(let error) = capture.map { imagesUnavailable = error.what }
        return TerminationReport.Backtrace(
            role: role,
            thread: .init(id: record.thread, name: record.threadName, isMain: record.isMainThread),
            signal: record.kind == .crash ? signalName(record.signal) : nil,
            faultAddress: record.kind == .crash && [SIGSEGV, SIGBUS].contains(record.signal) ? "0x" + String(record.address, radix: 16) : nil,
            unwinder: record.usedUnwindTables ? "unwind-tables" : "frame-pointers", truncated: record.truncated,
            capturedBy: "app-process", imagesUnavailable: imagesUnavailable, frames: frames)
    }

    /// A Swift symbol demangled by the runtime's own demangler, made readable as crash reports
    /// show it: `Notes.AppDelegate.save()` for `$s5Notes11AppDelegateC4saveyyF` (a private
    /// function's file discriminator and a Void result are left out). Other names as they are.
    static func demangled(_ name: String) -> String {
        let swift = ["$s", "_$s", "$S", "_$S", "$e", "_$e"].contains { name.hasPrefix($0) }
        guard swift, name.utf8.count <= ELFSymbols.maximumNameLength else { return name }
        let result = name.withCString { mangled -> String? in
            guard let text = swiftDemangle(mangled, strlen(mangled), nil, nil, 0) else { return nil }
            defer { free(text) }
            return String(cString: text)
        }
        guard var text = result, text != name else { return name }
        text = withoutPrivateDiscriminators(text)
        if text.hasSuffix(" -> ()") { text.removeLast(6) }
        return text
    }

    /// "(crash in _C634A96480C51D21CBFF6E0B386002E9)" → "crash".
    static func withoutPrivateDiscriminators(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "(") {
            let after = rest[rest.index(after: open)...]
            if let marker = after.range(of: " in _"), let close = after[marker.upperBound...].firstIndex(of: ")"),
               !after[..<marker.lowerBound].contains(where: { "() ".contains($0) }),
               after[marker.upperBound..<close].allSatisfy({ $0.isHexDigit }) {
                result += rest[..<open]
                result += after[..<marker.lowerBound]
                rest = after[after.index(after: close)...]
            } else {
                result += rest[...open]
                rest = after
            }
        }
        return result + rest
    }
}

/// The Swift runtime's demangler (exported by libswiftCore): the name demangled into a buffer it
/// allocates, or nil if the name is not a Swift symbol.
@_silgen_name("swift_demangle")
private func swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
