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

        let apps = Bundler.appProducts(in: context.package)
        let notDynamic = Bundler.appProducts(in: context.package, dynamic: false)
        let chosen: [AppPlugin]
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

        let bundler = Bundler(context: context, packageManager: packageManager)
        for bundle in try bundler.bundle(chosen, configuration: configuration, into: outputDirectory) {
            print("bundled \(bundle.path)")
        }
    }

    /// "app plugins here: A, B", or what makes one when there is none.
    private static func listing(_ apps: [AppPlugin]) -> String {
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
}
