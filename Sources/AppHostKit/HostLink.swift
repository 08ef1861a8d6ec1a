#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import AppHostProtocol
import AppHostSystem

/// What the SDK tells the host, and what it knows of the host's configuration. Sends are safe
/// from any thread.
///
/// In an app process the link is the control socket, started by the plugin's entry point before
/// any app code runs. Outside a host (a unit test, `DetachedApplication`) it is detached: its
/// configuration is made up from what the test gave, and each message the SDK would have sent
/// goes to an observer instead, so that background tasks, BGTaskScheduler and completion handlers
/// behave as under a host without one.
final class HostLink: Sendable {
    private struct State {
        var socket: ControlChannel?
        var configuration: WireConfiguration?
    }

    private let state: Mutex<State>
    /// Outside a host: receives every message the SDK would have sent.
    private let observer: (@Sendable (AppMessage) -> Void)?

    /// The app process's link, attached by `start` (PluginEntry.swift).
    init() {
        state = Mutex(State())
        observer = nil
    }

    /// A link to no host: `configuration` as given, messages to `observer`.
    init(detached configuration: WireConfiguration, observer: @escaping @Sendable (AppMessage) -> Void) {
        state = Mutex(State(configuration: configuration))
        self.observer = observer
    }

    func start(socket: ControlChannel, configuration: WireConfiguration) {
        state.withLock {
            $0.socket = socket
            $0.configuration = configuration
        }
    }

    /// Whether this is an app process's link to its host (the entry point has started it).
    var isAttached: Bool { state.withLock { $0.socket != nil } }

    /// Whether this link stands in for a host that is not there.
    var isDetached: Bool { observer != nil }

    /// The host's configuration: in an app process set by the entry point before any app code
    /// runs; in a detached one, made up from what the test gave.
    var configuration: WireConfiguration {
        // Only the process's own link can lack one, and only `Application.shared` reaches it, which
        // returns a detached application until the entry point has run: a placeholder, never a trap.
        state.withLock { $0.configuration } ?? .unattached
    }

    /// Whether the app runs under a host (false in a unit test).
    var isConnected: Bool { state.withLock { $0.socket != nil } }

    /// The least level of swift-log records the host wants; nil outside a host.
    var logLevel: String? { state.withLock { $0.configuration?.logLevel } }

    /// Sends a message to the host. A host that is gone cannot be told anything: the app process
    /// is about to be killed by its parent-death signal, so a failed send is dropped.
    func send(_ message: AppMessage) {
        if let observer {
            observer(message)
            return
        }
        let body = WireCoding.encode(message)
        state.withLock { state in
            try? state.socket?.send(body: body)
        }
    }

    /// A misuse of the SDK: printed on the app's standard error and shown in the host's events.
    func warn(_ text: String) {
        let line = "AppHostKit: warning: \(text)\n"
        writeStandardError(line)
        send(.warning(text))
    }
}

/// The app process's link to its host.
let hostLink = HostLink()

extension WireConfiguration {
    /// What a link that was never attached answers: no bundle, no container.
    static let unattached = WireConfiguration(
        bundleIdentifier: "", bundleName: "", bundlePath: "", pluginPath: "", delegateClassName: "", containerPath: "/",
        launchReason: "user")
}
