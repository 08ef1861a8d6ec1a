import Foundation
import PackagePlugin

// Shared by the bundle-app and apphost-test command plugins (Plugins/AppHostTest/Bundler.swift
// is a link to this file, as swift-argument-parser's plugins share GenerateCommon).

/// An app plugin: a `.dynamic` library product whose target directory holds an Info.plist.
struct AppPlugin {
    var product: LibraryProduct
    var plist: URL
}

/// Builds app plugin products and assembles each into `Name.app/` (its Info.plist, completed
/// with CFBundleExecutable, and the built .so linked against the shared SDK), with a record of
/// what it was made from, which `TestHost.bundle` reads to refuse a stale bundle.
struct Bundler {
    /// The record's file in each bundle: the library and the source directories it was made from.
    static let recordFile = ".apphost-bundled-from.json"

    let context: PluginContext
    let packageManager: PackageManager

    /// Builds and bundles `apps` into `directory`; returns the bundles.
    func bundle(_ apps: [AppPlugin], configuration: PackageManager.BuildConfiguration, into directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var bundles: [URL] = []
        for app in apps {
            let result = try packageManager.build(
                .product(app.product.name), parameters: .init(configuration: configuration, logging: .concise))
            guard result.succeeded else {
                throw BundleAppError("building \(app.product.name) failed:\n\(result.logText)")
            }
            guard let library = result.builtArtifacts.first(where: { $0.kind == .dynamicLibrary }) else {
                throw BundleAppError("building \(app.product.name) produced no dynamic library")
            }
            let bundle = try assemble(plist: app.plist, library: library.url, productName: app.product.name, into: directory)
            do {
                try linkAgainstTheSharedSDK(app.product, built: library.url, bundle: bundle, context: context)
            } catch {
                // The plugin SwiftPM linked, with the SDK in it, stays in the bundle: it launches
                // as well, only slower.
                Diagnostics.warning("\(app.product.name) carries its own copy of AppHostKit: \(error)")
            }
            try writeRecord(of: app, library: library.url, in: bundle)
            bundles.append(bundle)
        }
        return bundles
    }

    /// Library products whose single target directory holds an Info.plist: the dynamic ones (app
    /// plugins), or with `dynamic: false` the others (apps missing `type: .dynamic`).
    static func appProducts(in package: Package, dynamic: Bool = true) -> [AppPlugin] {
        package.products.compactMap { product in
            guard let library = product as? LibraryProduct, let target = library.targets.first else { return nil }
            let isDynamic: Bool
            if case .dynamic = library.kind { isDynamic = true } else { isDynamic = false }
            guard isDynamic == dynamic else { return nil }
            let plist = target.directoryURL.appendingPathComponent("Info.plist")
            return FileManager.default.fileExists(atPath: plist.path) ? AppPlugin(product: library, plist: plist) : nil
        }
    }


    /// Writes `Name.app/` with the plugin and its Info.plist, replacing an older bundle.
    private func assemble(plist: URL, library: URL, productName: String, into directory: URL) throws -> URL {
        let data = try Data(contentsOf: plist)
        guard var info = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw BundleAppError("\(plist.path) must hold a dictionary")
        }
        let name = info["CFBundleName"] as? String ?? productName
        info["CFBundleName"] = name
        info["CFBundleExecutable"] = library.lastPathComponent
        let bundle = directory.appendingPathComponent("\(name).app", isDirectory: true)
        try? FileManager.default.removeItem(at: bundle)
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: library, to: bundle.appendingPathComponent(library.lastPathComponent))
        let written = try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
        try written.write(to: bundle.appendingPathComponent("Info.plist"))
        return bundle
    }

    /// Writes what the bundle was made from, last: the record's time is the bundle's. The
    /// sources are the app target's directory and those of the targets of this package it
    /// depends on (its Info.plist is among them).
    private func writeRecord(of app: AppPlugin, library: URL, in bundle: URL) throws {
        let package = context.package.directoryURL.standardizedFileURL.path + "/"
        var sources: [String] = []
        for target in app.product.targets.flatMap({ [$0] + $0.recursiveTargetDependencies }) {
            let directory = target.directoryURL.standardizedFileURL.path
            // The package's own targets: not its dependencies' checkouts under .build.
            guard directory.hasPrefix(package), !directory.dropFirst(package.count).hasPrefix(".build/") else { continue }
            if !sources.contains(directory) { sources.append(directory) }
        }
        let record: [String: Any] = ["library": library.standardizedFileURL.path, "sources": sources]
        try JSONSerialization.data(withJSONObject: record, options: [.prettyPrinted, .sortedKeys])
            .write(to: bundle.appendingPathComponent(Self.recordFile))
    }
}

/// The SDK as a library of its own (docs/launching.md, "How apps are launched"). SwiftPM links a
/// library's targets into each product that depends on them, so each plugin it builds carries
/// AppHostKit and what it depends on (swift-log included); loading one binds about 1,200 symbols,
/// most of them the SDK's, in every app process. `bundle-app` links the SDK's objects once into
/// `libAppHostKit-HASH.so` (the hash names the objects' contents and the compiler), and the
/// plugin's own objects against it: the launch template loads the same library when it starts
/// (it finds it beside its binary as `libAppHostKit.so`), so a plugin of that build finds it
/// loaded and bound. The bundle carries a copy, which a plugin loads when it is launched by
/// another build of apphost.
extension Bundler {
    static let sdkTarget = "AppHostKit"

    func linkAgainstTheSharedSDK(_ product: LibraryProduct, built library: URL, bundle: URL, context: PluginContext) throws {
        guard let target = product.targets.first,
              let sdk = target.recursiveTargetDependencies.first(where: { $0.name == Self.sdkTarget }) else {
            throw BundleAppError("it does not depend on \(Self.sdkTarget)")
        }
        let sdkClosure = [sdk] + sdk.recursiveTargetDependencies
        let sdkTargets = Set(sdkClosure.map(\.name))
        let buildDirectory = library.deletingLastPathComponent().resolvingSymlinksInPath()
        // The objects SwiftPM linked into the plugin (its build directory's record of them),
        // each under TARGET.build/.
        let list = buildDirectory.appendingPathComponent("\(product.name).product/Objects.LinkFileList")
        guard let listed = try? String(contentsOf: list, encoding: .utf8) else {
            throw BundleAppError("SwiftPM left no list of its objects at \(list.path)")
        }
        var sdkObjects: [String] = [], ownObjects: [String] = []
        for line in listed.split(separator: "\n") where !line.isEmpty {
            let path = URL(fileURLWithPath: Self.unquoted(line)).resolvingSymlinksInPath().path
            guard path.hasPrefix(buildDirectory.path + "/") else { throw BundleAppError("an object outside \(buildDirectory.path): \(path)") }
            let directory = path.dropFirst(buildDirectory.path.count + 1).prefix { $0 != "/" }
            guard directory.hasSuffix(".build") else { throw BundleAppError("an object outside a target's directory: \(path)") }
            if sdkTargets.contains(String(directory.dropLast(".build".count))) { sdkObjects.append(path) } else { ownObjects.append(path) }
        }
        guard !sdkObjects.isEmpty else { throw BundleAppError("none of its objects is the SDK's") }

        let swiftc = try swiftCompiler(context)
        let name = "libAppHostKit-\(try Self.fingerprint(of: sdkObjects, linkedBy: swiftc)).so"
        let sdkDirectory = buildDirectory.appendingPathComponent("AppHostKit.sdk")
        let shared = sdkDirectory.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: shared.path) {
            try FileManager.default.createDirectory(at: sdkDirectory, withIntermediateDirectories: true)
            // Its own calls bind within it (-Bsymbolic-functions), whichever way it was loaded.
            try link(
                swiftc, sdkObjects, output: shared,
                arguments: ["-Xlinker", "-soname=\(name)", "-Xlinker", "-Bsymbolic-functions"] + Self.linkerArguments(of: sdkClosure))
            // Older builds' SDKs: each bundle linked against one carries its own copy.
            for old in (try? FileManager.default.contentsOfDirectory(atPath: sdkDirectory.path)) ?? [] where old != name {
                try? FileManager.default.removeItem(at: sdkDirectory.appendingPathComponent(old))
            }
        }
        // What the launch templates of this build load (an app process already forked keeps the
        // one it was forked with).
        try Self.place(copyOf: shared, at: buildDirectory.appendingPathComponent("libAppHostKit.so"))

        let own = ([target] + target.recursiveTargetDependencies).filter { !sdkTargets.contains($0.name) }
        let plugin = bundle.appendingPathComponent(library.lastPathComponent)
        let relinked = bundle.appendingPathComponent(".\(library.lastPathComponent).\(getpid())")
        defer { try? FileManager.default.removeItem(at: relinked) }
        try link(swiftc, ownObjects + [shared.path], output: relinked, arguments: ["-Xlinker", "-rpath=$ORIGIN"] + Self.linkerArguments(of: own))
        try Self.place(copyOf: shared, at: bundle.appendingPathComponent(name))
        try Self.replace(plugin, with: relinked)
    }

    /// A path as SwiftPM's list of objects writes it (quoted when it holds a space).
    private static func unquoted(_ line: Substring) -> String {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard let quote = trimmed.first, quote == "'" || quote == "\"", trimmed.count >= 2, trimmed.last == quote else { return trimmed }
        var path = "", escaped = false
        for character in trimmed.dropFirst().dropLast() {
            if !escaped && character == "\\" { escaped = true; continue }
            path.append(character)
            escaped = false
        }
        return path
    }

    /// The libraries `targets` link, as swiftc takes them: their `linkerSettings`' libraries and
    /// the flags pkg-config gives a system library. A flag swiftc has no spelling for is left out:
    /// a link that needs it fails, and the plugin is bundled as SwiftPM linked it.
    private static func linkerArguments(of targets: [any Target]) -> [String] {
        var arguments: [String] = []
        for target in targets {
            if let module = target as? any SourceModuleTarget { arguments += module.linkedLibraries.map { "-l\($0)" } }
            guard let system = target as? SystemLibraryTarget else { continue }
            for flag in system.linkerFlags {
                if flag.hasPrefix("-l") || flag.hasPrefix("-L") {
                    arguments.append(flag)
                } else if flag.hasPrefix("-Wl,") {
                    arguments += flag.dropFirst(4).split(separator: ",").flatMap { ["-Xlinker", String($0)] }
                } else if flag == "-pthread" {
                    arguments.append("-lpthread")
                }
            }
        }
        return arguments
    }

    /// swiftc beside the swift that runs this plugin, or on the PATH.
    private func swiftCompiler(_ context: PluginContext) throws -> URL {
        if let tool = try? context.tool(named: "swiftc") { return tool.url }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("swiftc")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw BundleAppError("no swiftc found")
    }

    /// Links `objects` into the shared library `output` as SwiftPM links a plugin, through a file
    /// of this process's own beside it.
    private func link(_ swiftc: URL, _ objects: [String], output: URL, arguments: [String]) throws {
        let directory = output.deletingLastPathComponent()
        let partial = directory.appendingPathComponent(".\(output.lastPathComponent).\(getpid()).partial")
        let listFile = directory.appendingPathComponent(".\(output.lastPathComponent).\(getpid()).objects")
        defer {
            try? FileManager.default.removeItem(at: listFile)
            try? FileManager.default.removeItem(at: partial)
        }
        try objects.map { "\"\($0)\"" }.joined(separator: "\n").write(to: listFile, atomically: true, encoding: .utf8)
        // The module's name is not the product's (which need not be an identifier): only
        // objects are linked.
        let process = Process()
        process.executableURL = swiftc
        process.arguments = ["-emit-library", "-o", partial.path, "-module-name", "AppHostLinked", "@\(listFile.path)",
                             "-Xlinker", "--gc-sections", "-Xlinker", "--no-undefined", "-g"] + arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BundleAppError("linking \(output.lastPathComponent) failed: \(String(decoding: said, as: UTF8.self))")
        }
        try Self.replace(output, with: partial)
    }

    /// Names one build of the SDK: its objects' contents (sha256sum's) and the linker's swiftc.
    /// FNV-1a, 64 bits, over those.
    private static func fingerprint(of objects: [String], linkedBy swiftc: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum", "--"] + objects.sorted()
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let sums = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BundleAppError("sha256sum of the SDK's objects failed") }
        let compiler = swiftc.resolvingSymlinksInPath()
        let attributes = try FileManager.default.attributesOfItem(atPath: compiler.path)
        let toolchain = "\(compiler.path) \(attributes[.size] ?? 0) \(attributes[.modificationDate] ?? 0)"
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sums + Data(toolchain.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// Copies `source` to `destination` through a file of this process's own, put in place in
    /// one step.
    private static func place(copyOf source: URL, at destination: URL) throws {
        let partial = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).\(getpid()).partial")
        defer { try? FileManager.default.removeItem(at: partial) }
        try? FileManager.default.removeItem(at: partial)
        try FileManager.default.copyItem(at: source, to: partial)
        try replace(destination, with: partial)
    }

    /// Puts `new` at `destination` in one step (a `rename`).
    private static func replace(_ destination: URL, with new: URL) throws {
        guard rename(new.path, destination.path) == 0 else {
            throw BundleAppError("cannot move \(new.path) to \(destination.path): \(String(cString: strerror(errno)))")
        }
    }
}

struct BundleAppError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
