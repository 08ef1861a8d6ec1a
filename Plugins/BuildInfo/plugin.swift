import Foundation
import PackagePlugin

/// Bakes which build the apphost executable is into it, for `apphost --version`: the package's
/// git commit (with `-modified` when tracked files differ from it), or `unknown` outside a git
/// checkout. A prebuild command, run by /bin/sh before each build, that rewrites
/// `BuildInfo.swift` only when its contents change: an unchanged file keeps its time, so an
/// incremental build compiles nothing more for it.
@main
struct BuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("Generated", isDirectory: true)
        let script = #"""
            set -u
            package="$1"; directory="$2"
            commit=$(git -c safe.directory="$package" -C "$package" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
            if [ "$commit" != unknown ] && ! git -c safe.directory="$package" -C "$package" diff --quiet HEAD -- 2>/dev/null; then
              commit="$commit-modified"
            fi
            mkdir -p "$directory"
            file="$directory/BuildInfo.swift"
            printf '/// The build of this binary (Plugins/BuildInfo).\nlet buildCommit = "%s"\n' "$commit" > "$file.new"
            if cmp -s "$file.new" "$file"; then rm -f "$file.new"; else mv "$file.new" "$file"; fi
            """#
        return [
            .prebuildCommand(
                displayName: "apphost's build commit",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "build-info", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output),
        ]
    }
}
