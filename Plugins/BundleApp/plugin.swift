import PackagePlugin
@main struct BundleApp: CommandPlugin { func performCommand(context: PluginContext, arguments: [String]) async throws {} }
