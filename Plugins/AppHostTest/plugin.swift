import Foundation
import PackagePlugin

/// `swift package apphost-test`: an app author's loop in one command. Builds the package and its
/// tests, bundles every app plugin into `.build/apps` (the one place `TestHost.bundle` looks,
/// which refuses a bundle older than its sources), then runs the tests, XCTest's and Swift
/// Testing's, as `swift test` does. The host is not built: the tests find an installed apphost
/// on the PATH, or `$APPHOST_EXECUTABLE` (Sources/AppHostTesting/AppHostTesting.docc/TestingYourApp.md, "Testing your app").
///
///     swift package apphost-test [--product NAME]… [--configuration debug|release] [-- SWIFT-TESTING ARGUMENTS…]
///
/// Arguments after `--` go to Swift Testing (`-- --filter HostedTests`); with them, XCTest's
/// tests are not run. It writes only under `.build` (SwiftPM's own directory), so it needs no
/// permission to write to the package.
@main
struct AppHostTest: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let (ours, testing) = split(arguments)
        var extractor = ArgumentExtractor(ours)
        let requested = extractor.extractOption(named: "product")
        let configurationName = extractor.extractOption(named: "configuration").last ?? "debug"
        guard extractor.remainingArguments.isEmpty else {
            throw BundleAppError(
                "unexpected arguments \(extractor.remainingArguments); usage: apphost-test [--product NAME]… "
                    + "[--configuration debug|release] [-- SWIFT-TESTING ARGUMENTS…]")
        }
        guard let configuration = ["debug": PackageManager.BuildConfiguration.debug, "release": .release][configurationName] else {
            throw BundleAppError("--configuration must be debug or release, not \(configurationName)")
        }
        let apps = Bundler.appProducts(in: context.package)
        for name in requested where !apps.contains(where: { $0.product.name == name }) {
            throw BundleAppError("\(name) is not an app plugin product of this package; app plugins here: \(apps.map(\.product.name).joined(separator: ", "))")
        }
        let chosen = requested.isEmpty ? apps : apps.filter { requested.contains($0.product.name) }

        let started = ContinuousClock.now
        print("apphost-test: building \(context.package.displayName) and its tests (\(configurationName))")
        let build = try packageManager.build(.all(includingTests: true), parameters: .init(configuration: configuration, logging: .concise))
        guard build.succeeded else { throw BundleAppError("the build failed:\n\(build.logText)") }

        let output = context.package.directoryURL.appendingPathComponent(".build/apps", isDirectory: true)
        let bundler = Bundler(context: context, packageManager: packageManager)
        let bundles = try bundler.bundle(chosen, configuration: configuration, into: output)
        let names = bundles.map(\.lastPathComponent).joined(separator: ", ")
        print("apphost-test: bundled \(bundles.isEmpty ? "no app" : names) into \(output.path) (\(seconds(since: started)))")

        // SwiftPM names the test product after the package; it is built beside the products.
        guard let anyProduct = build.builtArtifacts.first else { throw BundleAppError("the build produced nothing to test") }
        let tests = anyProduct.url.deletingLastPathComponent().appendingPathComponent("\(context.package.displayName)PackageTests.xctest")
        guard FileManager.default.isExecutableFile(atPath: tests.path) else {
            throw BundleAppError("\(context.package.displayName) has no tests to run (no \(tests.lastPathComponent) was built)")
        }
        var failed: [String] = []
        if testing.isEmpty, try run(tests, []) != 0 { failed.append("XCTest") }
        if try run(tests, ["--testing-library", "swift-testing"] + testing) != 0 { failed.append("Swift Testing") }
        guard failed.isEmpty else { throw BundleAppError("tests failed (\(failed.joined(separator: " and ")))") }
        print("apphost-test: tests passed, \(seconds(since: started)) from the start")
    }

    /// "12.3 s".
    private func seconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = start.duration(to: .now)
        return String(format: "%.1f s", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// The plugin's own arguments, and those after `--`, which go to Swift Testing.
    private func split(_ arguments: [String]) -> ([String], [String]) {
        guard let separator = arguments.firstIndex(of: "--") else { return (arguments, []) }
        return (Array(arguments[..<separator]), Array(arguments[(separator + 1)...]))
    }

    /// Runs the test binary with `arguments`, its output this command's; returns its status.
    private func run(_ tests: URL, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = tests
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }
}
