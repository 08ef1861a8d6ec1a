#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem

/// Crash and watchdog backtraces (README, "Crash and watchdog reports"): records from the app
/// process's handlers, each with the memory map read the moment it came, symbolized when the
/// report is written. What a record says never changes how the app's end is classified.
extension HostLoop {
    /// What a report adds about where the app was: the fatal-error message, the backtrace, or
    /// why there is none.
    struct Diagnostics {
        var fatalError: String?
        var backtrace: TerminationReport.Backtrace?
        var unavailable: String?

        /// The first frame in the app's own code, for the one-line `terminated` event: in the
        /// plugin, and not in the SDK the plugin links (AppHostKit and the modules under it), which
        /// is where a main thread waiting on the host would be.
        var appFrame: String? {
            let frames = backtrace?.frames.filter(\.isApp) ?? []
            guard let frame = frames.first(where: { !Self.isSDK($0.symbol) }) ?? frames.first else { return nil }
            return frame.symbol.map { "\($0) + \(frame.symbolOffset ?? 0)" } ?? frame.line
        }

        static let sdkModules = ["AppHostKit.", "AppHostProtocol.", "AppHostSystem.", "UIKit.", "os.", "Logging."]

        /// Whether a demangled symbol is the SDK's: its module, or a closure or thunk in it.
        static func isSDK(_ symbol: String?) -> Bool {
            guard let symbol else { return false }
            return sdkModules.contains { symbol.hasPrefix($0) || symbol.contains(" in \($0)") }
        }
    }

    /// Takes the records waiting on the app's diagnostics socket. A crash record gets the memory
    /// map at once, then its acknowledgement (the crashing thread waits for it before it dies);
    /// a sample counts only when a watchdog asked for one.
    func readDiagnostics(_ record: AppRecord, _ run: AppRun) {
        guard let process = run.process else { return }
        for received in process.receiveDiagnostics() {
            switch received.kind {
            case .crash:
                run.crashCapture = BacktraceCapture(record: received, map: MemoryMap.read(pid: process.pid))
                process.acknowledgeCrash()
            case .sample:
                guard case .requested = run.mainThreadSample, received.isMainThread else { continue }
                run.mainThreadSample = .answered(BacktraceCapture(record: received, map: MemoryMap.read(pid: process.pid)))
                handle(record, run, .mainThreadSampled)
            }
        }
    }

    /// Why the main thread did not answer a watchdog's sample signal in time.
    func unansweredSampleReason(_ process: AppProcess) -> String {
        if process.diagnosticsExhausted {
            return "the app process had sent more than \(AppProcess.maximumDiagnostics) diagnostics records; no more were read"
        }
        if ProcFS.isStopped(pid: process.pid) {
            return "the app process was stopped (SIGSTOP): its main thread could not answer"
        }
        return "the main thread did not answer within \(LifecycleMachine.mainThreadSampleTimeout.formatted) "
            + "(it blocks the sample signal, or app code replaced apphost's handler)"
    }

    /// The report's fatal-error message and backtrace, for a crash and for a watchdog kill.
    func diagnostics(of record: AppRecord, _ run: AppRun, termination: Termination, exit: ProcessExit) -> Diagnostics {
        var result = Diagnostics()
        let bundlePath = record.bundle.url.path
        var appPaths: Set<String> = [record.bundle.pluginURL.path]
        if let resolved = realpath(record.bundle.pluginURL.path, nil) {
            appPaths.insert(String(cString: resolved))
            free(resolved)
        }
        switch termination.kind {
        case .crash:
            guard case .signaled(let signal, _) = exit.status else { break }
            // The runtime prints its message and then traps (SIGILL, SIGTRAP) or aborts.
            if [SIGILL, SIGTRAP, SIGABRT].contains(signal) { result.fatalError = run.process?.fatalErrorMessage }
            if let capture = run.crashCapture, capture.record.signal == signal {
                result.backtrace = Symbolizer.backtrace(capture, role: "crashed", bundlePath: bundlePath, appPaths: appPaths)
            } else if let capture = run.crashCapture {
                result.unavailable = "the app process's record said \(signalName(capture.record.signal)), but it died of \(signalName(signal))"
            } else if run.process?.diagnosticsExhausted == true {
                result.unavailable = "the app process had sent more than \(AppProcess.maximumDiagnostics) diagnostics records; no more were read"
            } else {
                result.unavailable = signal == SIGKILL || signal == SIGSYS
                    ? "\(signalName(signal)) cannot be handled: no backtrace is taken"
                    : "the app process sent none (it crashed before apphost's handlers were installed, app code replaced them, or its stack had no room left)"
            }
        case .watchdog:
            switch run.mainThreadSample {
            case .answered(let capture):
                result.backtrace = Symbolizer.backtrace(capture, role: "main-at-kill", bundlePath: bundlePath, appPaths: appPaths)
            case .unanswered(let reason):
                result.unavailable = reason
            case .requested:
                result.unavailable = "the app process ended before its main thread answered"
            case nil:
                result.unavailable = "the app was suspended: a frozen main thread cannot answer"
            }
        default:
            break
        }
        return result
    }
}
