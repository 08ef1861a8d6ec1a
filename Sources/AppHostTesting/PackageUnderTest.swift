#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The package whose tests are running, found from the test binary's path (SwiftPM builds it
/// under the package's `.build`), and the one place its bundles are: `.build/apps`, where
/// `swift package apphost-test` (and `bundle-app` by default) puts them.
enum PackageUnderTest {
    /// The running test binary.
    static var testBinary: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    }

    /// The package's directory: the test binary's path above its `.build`; nil when it is not
    /// under one.
    static var directory: URL? {
        let components = testBinary.pathComponents
        guard let build = components.lastIndex(of: ".build") else { return nil }
        return URL(fileURLWithPath: NSString.path(withComponents: Array(components[..<build])), isDirectory: true)
    }

    /// The command that builds, bundles and tests an app's package.
    static let command = "swift package apphost-test"

    /// Why `bundle` is older than what it was made from, in one line naming the command that
    /// makes it again; nil when it is not, or when it carries no record of what it was made from
    /// (a bundle made by hand). The record is the bundle plugins' (Plugins/BundleApp/Bundler.swift):
    /// the built library and the source directories; its own time is the bundle's.
    static func staleness(of bundle: URL) -> String? {
        let record = bundle.appendingPathComponent(".apphost-bundled-from.json")
        guard let bundled = modificationTime(record.path),
              let data = try? Data(contentsOf: record),
              let fields = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        let name = bundle.lastPathComponent
        if let library = fields["library"] as? String, let built = modificationTime(library), built > bundled {
            return "\(name) is stale: \(library) was built after it was bundled; run \(command), which bundles the app before its tests"
        }
        for directory in fields["sources"] as? [String] ?? [] {
            if let changed = newestFile(under: directory, after: bundled) {
                return "\(name) is stale: \(changed) changed after it was bundled; run \(command), which bundles the app before its tests"
            }
        }
        return nil
    }

    /// A file under `directory` (hidden ones aside) changed after `time`, if any.
    private static func newestFile(under directory: String, after time: timespec) -> String? {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return nil }
        while let relative = walker.nextObject() as? String {
            if relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { continue }
            let path = directory + "/" + relative
            if let changed = modificationTime(path), changed > time { return path }
        }
        return nil
    }

    private static func modificationTime(_ path: String) -> timespec? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mtim : nil
    }
}

extension timespec {
    fileprivate static func > (lhs: timespec, rhs: timespec) -> Bool {
        (lhs.tv_sec, lhs.tv_nsec) > (rhs.tv_sec, rhs.tv_nsec)
    }
}
