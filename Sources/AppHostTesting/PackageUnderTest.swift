import Foundation

/// The package whose tests are running, found from the test binary's path (SwiftPM builds it
/// under the package's `.build`).
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
}
