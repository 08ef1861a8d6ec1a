#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostRuntime
import AppHostSystem

/// Where the apphost binary a test runs is.
enum Executable {
    /// The variable that names an apphost binary to use instead of the one beside the tests.
    static let variable = "APPHOST_EXECUTABLE"

    /// `explicit`, else `$APPHOST_EXECUTABLE`, else `apphost` beside the running test binary
    /// (SwiftPM builds every product of a package, and of its dependencies, into one directory).
    /// Throws a message that says how to build it.
    static func locate(_ explicit: URL?) throws(TestHostError) -> URL {
        let candidate: URL
        let origin: String
        if let explicit {
            candidate = explicit
            origin = "TestHost.Options.executable"
        } else if let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty {
            candidate = URL(fileURLWithPath: path)
            origin = "$\(variable)"
        } else {
            let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            candidate = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("apphost")
            guard access(candidate.path, X_OK) == 0 else {
                throw TestHostError(
                    "apphost is not built beside the tests (\(candidate.path)); build it in this package before swift test: "
                        + "swift build --product apphost && swift build --product apphost-init && swift build --product apphost-app "
                        + "(or set \(variable) to an apphost binary built by this Swift toolchain)",
                    code: .executableNotFound)
            }
            return try withInit(candidate)
        }
        guard access(candidate.path, X_OK) == 0 else {
            throw TestHostError("\(origin) names \(candidate.path), which is not an executable file", code: .executableNotFound)
        }
        return try withInit(candidate)
    }

    /// apphost runs each app under apphost-init, found beside it.
    private static func withInit(_ executable: URL) throws(TestHostError) -> URL {
        let initPath = executable.deletingLastPathComponent().appendingPathComponent("apphost-init").path
        guard access(initPath, X_OK) == 0 else {
            throw TestHostError(
                "apphost-init is missing beside \(executable.path): build it with swift build --product apphost-init", code: .executableNotFound)
        }
        return executable
    }
}

/// A host's private directory: its state directory, its policy file and any bundle copies.
enum PrivateDirectory {
    /// A new directory under the temporary directory, `apphost-testhost-XXXXXX`. Apps run as
    /// their own users on a root host, so it can be passed through (0711), not listed.
    static func make() throws(TestHostError) -> URL {
        var template = Array((NSTemporaryDirectory() + "apphost-testhost-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestHostError(
                "cannot make a directory in \(NSTemporaryDirectory()): \(errnoText(errno))", code: .setupFailed)
        }
        let path = String(cString: made)
        chmod(path, 0o711)
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    /// Removes the directory, unmounting what a killed host left mounted in it first.
    static func remove(_ directory: URL) {
        _ = try? StateDirectory(directory.appendingPathComponent("state", isDirectory: true)).erase(nil)
        try? FileManager.default.removeItem(at: directory)
    }

    /// `bundle` as the host should be given it: on a root host each app runs as its own user,
    /// which must be able to reach its bundle; a bundle under a directory others cannot pass
    /// through (a checkout in /root) is copied into `directory` first.
    static func reachable(_ bundle: URL, in directory: URL) throws -> URL {
        let bundle = bundle.standardizedFileURL
        guard getuid() == 0, !passable(bundle) else { return bundle }
        let copies = directory.appendingPathComponent("bundles", isDirectory: true)
        try FileManager.default.createDirectory(at: copies, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let copy = copies.appendingPathComponent(bundle.lastPathComponent, isDirectory: true)
        try FileManager.default.copyItem(at: bundle.resolvingSymlinksInPath(), to: copy)
        return copy
    }

    /// Whether every directory above `url` lets others pass through.
    private static func passable(_ url: URL) -> Bool {
        var path = ""
        for component in url.pathComponents.dropLast() {
            path = component == "/" ? "/" : (path == "/" ? "/" + component : path + "/" + component)
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IXOTH == 0 { return false }
        }
        return true
    }
}
