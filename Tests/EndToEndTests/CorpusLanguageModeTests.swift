import Foundation
import Testing

/// The delegate corpus (Tests/Fixtures/Delegates, docs/porting.md, "Porting iOS code") is built in one
/// language mode each by the package; here each plugin's files are type-checked in the other,
/// against the modules the build made, exactly as the package compiles them. Swift 6 code
/// compiles in Swift 5 mode without a diagnostic. Swift 5 code compiles in Swift 6 mode but for
/// what Swift 6 refuses on iOS too (the language's rules, not apphost's modules), listed here
/// exactly: a new error is a module of ours that Swift 6 code cannot use.
@Suite struct CorpusLanguageModeTests {
    /// The plugins written in Swift 6 mode, checked in Swift 5 mode: nothing to say.
    @Test(arguments: ["Adaptor", "Scenes", "MainSwift6"])
    func swift6DelegatesCompileInSwift5Mode(_ plugin: String) throws {
        #expect(try errors(typeChecking: plugin, swiftVersion: 5) == [])
    }

    /// The plugins written in Swift 5 mode, checked in Swift 6 mode: only what the language
    /// refuses whatever the SDK: `@UIApplicationMain` is an error in Swift 6 (use `@main`), and
    /// a closure the delegate declares `completion: @escaping () -> Void` (not `Sendable`)
    /// cannot be captured by CallKit's `@Sendable` completion.
    @Test(arguments: [
        ("LegacyMain", ["AppDelegate.swift: 'UIApplicationMain' is deprecated"]),
        ("LegacyScenes", ["AppDelegate.swift: 'UIApplicationMain' is deprecated"]),
        ("Frameworks", ["CallAppDelegate.swift: capture of 'completion' with non-Sendable type '() -> Void' in a '@Sendable' closure"]),
    ])
    func swift5DelegatesCompileInSwift6ModeButForTheLanguagesOwnRules(_ plugin: String, _ expected: [String]) throws {
        #expect(try errors(typeChecking: plugin, swiftVersion: 6) == expected)
    }

    /// The errors of type-checking the plugin's files in that mode, as "FILE: message", each once.
    private func errors(typeChecking plugin: String, swiftVersion: Int) throws -> [String] {
        let root = Paths.packageRoot
        let build = Paths.binaries.resolvingSymlinksInPath()
        let modules = build.appendingPathComponent("Modules")
        try Paths.requireBuilt(modules.appendingPathComponent("UIKit.swiftmodule"))
        let directory = root.appendingPathComponent("Tests/Fixtures/Delegates/\(plugin)")
        let sources = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }.sorted()
        // The C modules the Swift modules were built against, as SwiftPM passes them.
        let clangModules = [
            ("\(build.path)/CAppHostKitRecord.build/module.modulemap", "\(root.path)/Sources/CAppHostKitRecord/include"),
            ("\(build.path)/CAppHostEpoll.build/module.modulemap", "\(root.path)/Sources/CAppHostEpoll/include"),
            ("\(build.path)/CAppHostShims.build/module.modulemap", "\(root.path)/Sources/CAppHostShims/include"),
            ("\(root.path)/Sources/AppleModuleMaps/include/module.modulemap", "\(root.path)/Sources/AppleModuleMaps/include"),
            ("\(root.path)/.build/checkouts/swift-system/Sources/CSystem/include/module.modulemap",
             "\(root.path)/.build/checkouts/swift-system/Sources/CSystem/include"),
        ]
        // The build's own cache of compiled C modules: made once, not per check.
        let cache = build.appendingPathComponent("ModuleCache")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-parse-as-library", "-module-name", "Corpus\(plugin)",
                             "-swift-version", "\(swiftVersion)", "-I", modules.path, "-module-cache-path", cache.path]
            + clangModules.flatMap { ["-Xcc", "-fmodule-map-file=\($0.0)", "-Xcc", "-I", "-Xcc", $0.1] }
            + sources.map { directory.appendingPathComponent($0).path }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // "PATH:LINE:COLUMN: error: MESSAGE [#Group]" lines, the first of each diagnostic.
        var seen: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix(directory.path) && line.contains(": error: ") {
            let file = line.dropFirst(directory.path.count + 1).prefix { $0 != ":" }
            var message = line.components(separatedBy: ": error: ")[1]
            if let group = message.range(of: " [#") { message = String(message[..<group.lowerBound]) }
            message = message.components(separatedBy: "; ").first ?? message
            let error = "\(file): \(message)"
            if !seen.contains(error) { seen.append(error) }
        }
        #expect((process.terminationStatus == 0) == seen.isEmpty, "swiftc said:\n\(text)")
        return seen
    }
}
