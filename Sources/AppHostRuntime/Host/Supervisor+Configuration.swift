public import Foundation
public import Logging

extension Supervisor {
    /// What a host is started with (the CLI builds it from its options and policy file).
    public struct Configuration: Sendable {
        public var policy = Policy()
        /// Reports and containers live here.
        public var stateDirectory: URL
        /// Names this host among others on the same machine (cgroups and state are per instance).
        public var instance = "default"
        /// Carries out background URL session transfers; nil: none (they wait).
        package var transferRunner: (any TransferRunner)?
        /// The binary re-executed as each app process (`EXECUTABLE __app-process`).
        public var executable: String
        /// The init of each app's PID namespace: `apphost-init` beside `executable`.
        public var initExecutable: String {
            URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("apphost-init").path
        }
        /// What each app process runs (the template, and the exec launcher's app process):
        /// `apphost-app` beside `executable`, else `executable` itself, which can run them too but
        /// makes every type lookup in the app process slower (Sources/apphost-app/main.swift).
        public var appExecutable: String {
            let slim = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("apphost-app").path
            return FileManager.default.isExecutableFile(atPath: slim) ? slim : executable
        }
        /// How app processes are started: exec'd ahead of their launch (the default: each its
        /// own address-space layout, as Android's pool of exec'd processes gives), forked from the
        /// host's template process (the Swift runtime and Foundation loaded once, as Android's
        /// zygote does; the layout shared), or each exec'd at its launch.
        public var launcher: Launcher = .standby
        /// Forces a suspension mechanism; nil picks the best the machine offers.
        public var suspension: SuspensionMechanism?
        /// Copy each app's standard output and error to the host's standard error, line by line.
        public var forwardAppOutput = true
        /// Forces how memory limits are enforced; nil picks the memory cgroup where it can.
        public var memoryEnforcement: MemoryEnforcement?
        /// The simulated power and network at start (`power`, `network` change them).
        public var power: PowerState = .plugged
        public var network: NetworkState = .online
        /// Background app refresh (as iOS's Settings switch): off, no fetch and no refresh task
        /// runs, and BGTaskScheduler's submit throws `unavailable`.
        public var backgroundAppRefresh = true
        /// Each app in a PID and a mount namespace of its own, where the machine allows it
        /// (off: as on a machine that does not; the benchmark measures what they cost).
        public var namespaces = true
        /// Forces how containers are held to their storage limits; nil picks the best the
        /// state directory's machine offers (project quotas, else disk images, else accounting).
        public var storageMechanism: StorageMechanism?
        /// The least level of the apps' swift-log records that reach the host as `log` events.
        public var appLogLevel: LogLevel = .info
        /// The host's own diagnostics: each launch, callback, freeze, thaw, kill and report, at
        /// debug and trace level.
        public var logger = Logger(label: "apphost")

        public init(stateDirectory: URL, executable: String) {
            self.stateDirectory = stateDirectory
            self.executable = executable
        }
    }
}
