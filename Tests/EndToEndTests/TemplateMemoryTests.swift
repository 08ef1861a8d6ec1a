#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Nothing of one launch reaches another app's process through the launch template's memory
/// (docs/launching.md, "How apps are launched"): every fork inherits the template's heap, so a request
/// it kept (a launch's container paths, environment, Landlock arguments) would be readable by
/// every app launched after it. (Under the standby launcher no app process is a fork.)
@Suite struct TemplateMemoryTests {
    @Test(arguments: ["template", "standby"])
    func anAppLaunchedAfterAnotherFindsNothingOfItsLaunchInItsMemory(launcher: String) throws {
        let scratch = try Scratch()
        // A longer name than the next app's: the template's allocator would not reuse what held
        // its launch for the next one's, which would hide a leak.
        let first = "First" + String(repeating: "Long", count: 40)
        let host = try HostSession(
            [try scratch.bundle(first), try scratch.bundle("Second")], scratch: scratch, arguments: ["--launcher", launcher])
        _ = try host.waitFor(first, "didBecomeActive")
        host.send("terminate \(first)")
        _ = try host.waitFor(first, "terminated")
        // Its standby is forked from the template after First's launch: what the template kept
        // of that launch would be in it.
        host.send("open Second")
        let second = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        // Not the whole path: a freed string's first bytes are the allocator's.
        let firstContainer = "/containers/test.\(first.lowercased())", secondContainer = "/containers/test.second"
        let memory = try #require(readableMemory(of: second), "cannot read /proc/\(second)/mem: \(String(cString: strerror(errno)))")
        // The check can see a container path: the app's own is there.
        #expect(occurrences(of: secondContainer, in: memory) > 0)
        #expect(occurrences(of: firstContainer, in: memory) == 0)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Every readable private mapping of `pid` (its heap, stacks, anonymous and file-backed data),
    /// read through /proc/PID/mem; nil if that cannot be opened.
    private func readableMemory(of pid: pid_t) -> [[UInt8]]? {
        let descriptor = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let maps = (try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? ""
        var regions: [[UInt8]] = []
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard fields.count >= 2, fields[1].hasPrefix("r"), fields[1].hasSuffix("p"), !line.hasSuffix("[vvar]"), !line.hasSuffix("[vsyscall]")
            else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64(String($0), radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0] else { continue }
            var bytes = [UInt8](repeating: 0, count: Int(bounds[1] - bounds[0]))
            let count: Int = bytes.withUnsafeMutableBytes { buffer in pread(descriptor, buffer.baseAddress, buffer.count, off_t(Int64(bitPattern: bounds[0]))) }
            if count > 0 { regions.append(Array(bytes.prefix(count))) }
        }
        return regions
    }

    private func occurrences(of text: String, in regions: [[UInt8]]) -> Int {
        let needle = Array(text.utf8)
        return regions.reduce(0) { total, region in
            guard region.count >= needle.count else { return total }
            var found = 0
            var index = 0
            while index <= region.count - needle.count {
                if region[index] == needle[0], Array(region[index..<index + needle.count]) == needle {
                    found += 1
                    index += needle.count
                } else {
                    index += 1
                }
            }
            return total + found
        }
    }
}
