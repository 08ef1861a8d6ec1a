import Foundation
import PackagePlugin

/// `swift package bundle-app`: builds app plugin products and assembles each into `Name.app/`
/// (its Info.plist, completed with CFBundleExecutable, and the built .so).
///
/// An app plugin is a `.dynamic` library product whose target directory holds an Info.plist.
///
///     swift package --allow-writing-to-package-directory bundle-app [--product NAME]… [--all]
///         [--output DIR] [--configuration debug|release]
@main
struct BundleApp: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let requested = extractor.extractOption(named: "product")
        let all = extractor.extractFlag(named: "all") > 0
        let output = extractor.extractOption(named: "output").last
        let configurationName = extractor.extractOption(named: "configuration").last ?? "debug"
        guard extractor.remainingArguments.isEmpty else {
            throw BundleAppError("unexpected arguments \(extractor.remainingArguments); usage: bundle-app [--product NAME]… [--all] [--output DIR] [--configuration debug|release]")
        }
        guard let configuration = ["debug": PackageManager.BuildConfiguration.debug, "release": .release][configurationName] else {
            throw BundleAppError("--configuration must be debug or release, not \(configurationName)")
        }

        let apps = appProducts(in: context.package)
        let notDynamic = appProducts(in: context.package, dynamic: false)
        let chosen: [(product: LibraryProduct, plist: URL)]
        if all {
            guard !apps.isEmpty || notDynamic.isEmpty else { throw Self.notDynamicError(notDynamic[0].product) }
            chosen = apps
        } else if !requested.isEmpty {
            chosen = try requested.map { name in
                if let app = notDynamic.first(where: { $0.product.name == name }) { throw Self.notDynamicError(app.product) }
                guard let app = apps.first(where: { $0.product.name == name }) else {
                    throw BundleAppError("\(name) is not an app plugin product; \(Self.listing(apps))")
                }
                return app
            }
        } else if apps.count == 1 {
            chosen = apps
        } else if apps.isEmpty, let app = notDynamic.first {
            throw Self.notDynamicError(app.product)
        } else {
            throw BundleAppError("name a product with --product, or pass --all; \(Self.listing(apps))")
        }

        let outputDirectory = output.map { URL(fileURLWithPath: $0, relativeTo: context.package.directoryURL) }
            ?? context.package.directoryURL.appendingPathComponent(".build/apps")
        try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)

        for app in chosen {
            let result = try packageManager.build(
                .product(app.product.name), parameters: .init(configuration: configuration, logging: .concise))
            guard result.succeeded else {
                throw BundleAppError("building \(app.product.name) failed:\n\(result.logText)")
            }
            guard let library = result.builtArtifacts.first(where: { $0.kind == .dynamicLibrary }) else {
                throw BundleAppError("building \(app.product.name) produced no dynamic library")
            }
            let bundle = try assemble(plist: app.plist, library: library.url, productName: app.product.name, into: outputDirectory)
            print("bundled \(bundle.path)")
        }
    }

    /// "app plugins here: A, B", or what makes one when there is none.
    private static func listing(_ apps: [(product: LibraryProduct, plist: URL)]) -> String {
        apps.isEmpty
            ? "this package has no app plugin: a library product of type: .dynamic whose target holds an Info.plist"
            : "app plugins here: \(apps.map(\.product.name).joined(separator: ", "))"
    }

    /// An app's product declared without `type: .dynamic` (a static or automatic library, which
    /// builds no shared object to load).
    private static func notDynamicError(_ product: LibraryProduct) -> BundleAppError {
        let targets = product.targets.map { "\"\($0.name)\"" }.joined(separator: ", ")
        return BundleAppError(
            "\(product.name) has an Info.plist but is not a dynamic library; an app plugin must be one: "
                + ".library(name: \"\(product.name)\", type: .dynamic, targets: [\(targets)])")
    }

    /// Library products whose single target directory holds an Info.plist: the dynamic ones (app
    /// plugins), or with `dynamic: false` the others (apps missing `type: .dynamic`).
    private func appProducts(in package: Package, dynamic: Bool = true) -> [(product: LibraryProduct, plist: URL)] {
        package.products.compactMap { product in
            guard let library = product as? LibraryProduct, let target = library.targets.first else { return nil }
            let isDynamic: Bool
            if case .dynamic = library.kind { isDynamic = true } else { isDynamic = false }
            guard isDynamic == dynamic else { return nil }
            let plist = target.directoryURL.appendingPathComponent("Info.plist")
            return FileManager.default.fileExists(atPath: plist.path) ? (library, plist) : nil
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
}

struct BundleAppError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
