import AppHostRuntime
import Foundation
import Synchronization

/// A launched host's control socket (`apphost ctl`): a command arriving there runs as a line of
/// standard input would and is answered as standard output and error would show it, and every
/// event goes to each follower of `apphost ctl events`.
final class HostControl: Sendable {
    private let server = Mutex<ControlServer?>(nil)

    /// Starts listening; returns a warning line if it cannot (the host runs on without it).
    /// `quit` ends the host after a `quit` command has been answered.
    func start(supervisor: Supervisor, json: Bool, quit: @escaping @Sendable () -> Void) -> String? {
        let paths = ControlPaths(stateDirectory: supervisor.configuration.stateDirectory)
        do {
            let started = try ControlServer(paths: paths, handler: { command, reply in
                let printer = EventPrinter(json: json, output: reply.output, error: reply.error)
                var session = CommandSession(supervisor: supervisor, printer: printer)
                session.answersWithResults = true
                switch await session.execute(command, origin: "ctl") {
                case .next: return 0
                case .failed: return 1
                case .quit:
                    quit()
                    return 0
                }
            }, formatter: { event, json in json ? event.jsonLine : event.humanLine }, unknownApp: { supervisor.unknownApp($0) })
            server.withLock { $0 = started }
            return nil
        } catch {
            return "no control socket (apphost ctl cannot reach this host): \(error)"
        }
    }

    func publish(_ event: HostEvent) {
        server.withLock { $0 }?.publish(event)
    }

    /// Stops listening, giving commands under way up to a second to be answered.
    func close() {
        server.withLock { $0 }?.close(answering: .seconds(1))
    }
}
