#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import CCurl
package import AppHostRuntime
import AppHostProtocol

/// The host's HTTP transfers (docs/transfers.md, "Background transfers"), on the system's libcurl, never
/// in an app process (the apphost executable alone links it). It knows nothing of apps but
/// their names: it is given a transfer and its files, and reports what happens through `report`
/// (the supervisor hops to its queue).
///
/// One thread of its own drives libcurl's multi interface: it waits in `curl_multi_poll` on
/// every transfer's socket at once, and a start or a stop wakes it (`curl_multi_wakeup`). At most
/// `maximumRunning` transfers run at once, `maximumRunningPerApp` of one app; the rest wait their
/// turn, taken between apps in turn. A download writes to its part file and resumes it with a
/// Range request after a dropped connection or a restart of the host; an upload streams its
/// body from its file.
package final class TransferService: TransferRunner {
    /// Attempts after a dropped connection or a timeout before the transfer fails.
    static let maximumAttempts = 5
    /// An upload's response body is cut at this.
    static let responseBodyLimit = 64 * 1024
    /// A response's header fields kept for the app (`allHeaderFields`), at most.
    static let headerFieldLimit = 64
    /// Transfers running at once in the host, and of one app; each holds at most one connection.
    package static let maximumRunning = 32
    package static let maximumRunningPerApp = 6

    struct Settings: Sendable {
        var connectTimeout: Duration
        var readTimeout: Duration
        var resourceTimeout: Duration
        var destinations: TransferDestinations
    }

    private let engine: Engine

    package init(
        connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(60), resourceTimeout: Duration = .seconds(7 * 24 * 3600),
        destinations: TransferDestinations = TransferDestinations()
    ) {
        _ = Self.globalInit
        engine = Engine(Settings(connectTimeout: connectTimeout, readTimeout: readTimeout, resourceTimeout: resourceTimeout, destinations: destinations))
        let thread = Thread { [engine] in engine.run() }
        thread.name = "apphost transfers"
        thread.start()
    }

    /// libcurl's global set-up, once in the process, before any thread uses it.
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    deinit { engine.send(.shutdown) }

    /// Starts the job; `report` gets its updates from the engine's thread. A job already running
    /// is left alone.
    package func start(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void) {
        engine.send(.start(job, report))
    }

    /// Stops the job (its part file stays, for a later resume); it reports nothing more.
    package func stop(_ id: String) {
        engine.send(.stop(id))
    }
}

/// The engine's thread and what it alone touches; `send` is the one way in from elsewhere.
private final class Engine: @unchecked Sendable {
    enum Command {
        case start(TransferJob, @Sendable (TransferUpdate) -> Void)
        case stop(String)
        case shutdown
    }

    /// A transfer not running: new, or waiting to try again.
    struct Waiting {
        var job: TransferJob
        var report: @Sendable (TransferUpdate) -> Void
        var attempt = 0
        var validator: String?
        var notBefore = ContinuousClock.now
    }

    private let settings: TransferService.Settings
    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex<[Command]>([])
    // The engine's thread's alone:
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var waiting: [Waiting] = []
    /// The app whose transfer started last: the next turn goes to another, if one waits.
    private var lastApp = ""

    init(_ settings: TransferService.Settings) {
        self.settings = settings
        multi = curl_multi_init()
        // Idle connections kept for reuse, in all.
        apphost_curl_multi_set_long(multi, CURLMOPT_MAXCONNECTS, TransferService.maximumRunning)
    }

    func send(_ command: Command) {
        inbox.withLock { $0.append(command) }
        curl_multi_wakeup(multi)
    }

    func run() {
        while true {
            let commands = inbox.withLock { commands in
                defer { commands = [] }
                return commands
            }
            for command in commands {
                switch command {
                case .start(let job, let report):
                    guard !isKnown(job.id) else { continue }
                    waiting.append(Waiting(job: job, report: report, validator: job.validator))
                case .stop(let id):
                    waiting.removeAll { $0.job.id == id }
                    for (handle, transfer) in running where transfer.job.id == id { remove(handle) }
                case .shutdown:
                    for handle in running.keys { remove(handle) }
                    curl_multi_cleanup(multi)
                    return
                }
            }
            admit()
            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                finish(handle, message.pointee.data.result)
            }
            if admit() { continue }
            curl_multi_poll(multi, nil, 0, pollTimeout(), nil)
        }
    }

    private func isKnown(_ id: String) -> Bool {
        waiting.contains { $0.job.id == id } || running.values.contains { $0.job.id == id }
    }

    /// Starts waiting transfers while there is room, an app at a time in turn. Returns whether
    /// it started any.
    @discardableResult
    private func admit() -> Bool {
        var started = false
        while running.count < TransferService.maximumRunning, let index = nextTurn() {
            let next = waiting.remove(at: index)
            lastApp = next.job.app
            started = true
            do {
                let transfer = try CurlTransfer(job: next.job, attempt: next.attempt, validator: next.validator, settings: settings, report: next.report)
                running[transfer.handle] = transfer
                curl_multi_add_handle(multi, transfer.handle)
            } catch {
                next.report(.ended(.failed(code: error.code, message: error.message, status: error.status)))
            }
        }
        return started
    }

    /// The waiting transfer whose turn it is: due, of an app below its share, another app's
    /// than the last started where one waits, and the longest waiting.
    private func nextTurn() -> Int? {
        let now = ContinuousClock.now
        var perApp: [String: Int] = [:]
        for transfer in running.values { perApp[transfer.job.app, default: 0] += 1 }
        let due = waiting.indices.filter {
            waiting[$0].notBefore <= now && perApp[waiting[$0].job.app, default: 0] < TransferService.maximumRunningPerApp
        }
        return due.first { waiting[$0].job.app != lastApp } ?? due.first
    }

    /// A transfer libcurl finished: its outcome reported, or another attempt queued.
    private func finish(_ handle: UnsafeMutableRawPointer, _ code: CURLcode) {
        guard let transfer = running[handle] else { return }
        remove(handle)
        switch transfer.outcome(code) {
        case .success(let outcome):
            transfer.report(.ended(outcome))
        case .failure(let failure):
            let next = transfer.attempt + 1
            if failure.retry && next < TransferService.maximumAttempts {
                waiting.append(Waiting(
                    job: transfer.job, report: transfer.report, attempt: next, validator: transfer.validator ?? transfer.job.validator,
                    notBefore: .now + .milliseconds(100 << min(next, 5))))
            } else {
                let message = failure.retry ? "\(failure.message) (\(TransferService.maximumAttempts) attempts)" : failure.message
                transfer.report(.ended(.failed(code: failure.code, message: message, status: failure.status)))
            }
        }
    }

    private func remove(_ handle: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, handle)
        running[handle] = nil
    }

    /// Until the first waiting transfer is due (libcurl's own timeouts shorten it), at most a second.
    private func pollTimeout() -> Int32 {
        guard running.count < TransferService.maximumRunning, let due = waiting.map(\.notBefore).min() else { return 1000 }
        let wait = due - .now
        return Int32(clamping: max(0, min(1000, wait.milliseconds + 1)))
    }
}
