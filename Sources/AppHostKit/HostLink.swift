#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import AppHostProtocol
import AppHostSystem

/// The app process's end of the control socket. Sends are safe from any thread.
final class HostLink: Sendable {
    private struct State {
        var socket: ControlChannel?
        var configuration: WireConfiguration?
    }

    private let state = Mutex(State())

    func start(socket: ControlChannel, configuration: WireConfiguration) {
        state.withLock {
            $0.socket = socket
            $0.configuration = configuration
        }
    }

    /// The host's configuration; the entry point sets it before any app code runs.
    var configuration: WireConfiguration {
        state.withLock { state in
            guard let configuration = state.configuration else {
                fatalError("AppHostKit: the app is not running under apphost (no configuration)")
            }
            return configuration
        }
    }

    /// Whether the app runs under a host (false in a unit test).
    var isConnected: Bool { state.withLock { $0.socket != nil } }

    /// The least level of swift-log records the host wants; nil outside a host.
    var logLevel: String? { state.withLock { $0.configuration?.logLevel } }

    /// Sends a message to the host. A host that is gone cannot be told anything: the app process
    /// is about to be killed by its parent-death signal, so a failed send is dropped.
    func send(_ message: AppMessage) {
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

let hostLink = HostLink()
