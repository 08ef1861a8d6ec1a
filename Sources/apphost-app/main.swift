#if canImport(Glibc)
import Glibc
#endif
import AppHostRunner

// Every app process's binary: the launch template (`apphost-app __template`), which forks app
// processes, and the exec launcher's app process (`apphost-app __app-process`). It links the
// runner alone, not the host: each conformance check and type lookup in an app process scans
// the records of every image loaded, and the host's own (the CLI, the supervisor, the transfer
// service) were two fifths of them (docs/launching.md, "How apps are launched").
switch CommandLine.arguments.dropFirst().first {
case AppProcessRunner.argument?: AppProcessRunner.main()
case LaunchTemplate.argument?: LaunchTemplate.main()
default:
    let line = "apphost-app runs app processes for apphost; it is not run by hand\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(64)
}
