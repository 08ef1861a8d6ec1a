#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostRuntime
import AppHostSystem

/// Where the apphost binary a test runs is. Nothing is built: an app's package never compiles
/// the host (Sources/AppHostTesting/AppHostTesting.docc/TestingYourApp.md, "Testing your app": install one, or point at a checkout's build).
enum Executable {
    /// The variable that names an apphost binary to use instead of the one on the PATH.
    static let variable = "APPHOST_EXECUTABLE"

    /// `explicit`, else `$APPHOST_EXECUTABLE`, else (in apphost's own package only) the
    /// `apphost` its tests were built beside, else the `apphost` on the PATH (an installed one,
    /// `scripts/install`). Symbolic links are resolved: `apphost-init` is found beside the file
    /// itself. Throws a message that says how to get one.
    static func locate(
        _ explicit: URL?, environment: [String: String] = ProcessInfo.processInfo.environment, ownBuild: URL? = apphostsOwnBuild()
    ) throws(TestHostError) -> URL {
        if let explicit { return try checked(explicit, origin: "TestHost.Options.executable") }
        if let path = environment[variable], !path.isEmpty { return try checked(URL(fileURLWithPath: path), origin: "$\(variable)") }
        if let ownBuild { return try withInit(ownBuild) }
        let path = environment["PATH"] ?? ""
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("apphost")
            if access(candidate.path, X_OK) == 0 { return try withInit(candidate.resolvingSymlinksInPath()) }
        }
        throw TestHostError(
            "no apphost to run the tests: none is on the PATH (\(path)) and \(variable) is not set; install one from an apphost "
                + "checkout with scripts/install [--prefix DIR], or set \(variable) to a checkout's .build/debug/apphost after swift build",
            code: .executableNotFound)
    }

    /// `candidate`, named by `origin`, if it is an executable file with apphost-init beside it.
    private static func checked(_ candidate: URL, origin: String) throws(TestHostError) -> URL {
        guard access(candidate.path, X_OK) == 0 else {
            throw TestHostError("\(origin) names \(candidate.path), which is not an executable file", code: .executableNotFound)
        }
        return try withInit(candidate.resolvingSymlinksInPath())
    }

    /// The `apphost` beside the running test binary when the package under test is apphost
    /// itself (its tests test the host they were built with, never an installed one).
    static func apphostsOwnBuild() -> URL? {
        guard let package = PackageUnderTest.directory,
              FileManager.default.fileExists(atPath: package.appendingPathComponent("Sources/AppHostTesting/TestHost.swift").path)
        else { return nil }
        let candidate = PackageUnderTest.testBinary.deletingLastPathComponent().appendingPathComponent("apphost")
        return access(candidate.path, X_OK) == 0 ? candidate : nil
    }

    /// apphost runs each app under apphost-init, found beside it.
    private static func withInit(_ executable: URL) throws(TestHostError) -> URL {
        let initPath = executable.deletingLastPathComponent().appendingPathComponent("apphost-init").path
        guard access(initPath, X_OK) == 0 else {
            throw TestHostError(
                "apphost-init is missing beside \(executable.path): install apphost with scripts/install, which puts it there "
                    + "(in a checkout: swift build --product apphost-init)", code: .executableNotFound)
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
