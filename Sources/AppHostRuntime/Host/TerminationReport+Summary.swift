import Foundation

extension TerminationReport {
    /// How the process ended and who decided it. An app the host ends may exit by itself first:
    /// the SDK exits with status 0 when the host closes its connection, which the host does as
    /// it ends the app (before its SIGKILL lands, or while it samples a blocked main thread). A
    /// report said "exited with status 0; ended by the host", which reads as a contradiction.
    static func processLine(signal: String?, exitStatus: Int32?, crash: Bool) -> String {
        if crash {
            let end = signal.map { "killed by \($0)" } ?? exitStatus.map { "exited with status \($0)" } ?? "ended"
            return "\(end); a crash: the app ended without the host deciding it"
        }
        if let signal { return "killed by \(signal); ended by the host" }
        if exitStatus == 0 { return "ended by the host: it exited (status 0) as the host closed its connection to end it" }
        if let exitStatus { return "ended by the host; it exited with status \(exitStatus)" }
        return "ended by the host"
    }

    /// The report for a person (`apphost reports APP --last`): who, why, what it held and used,
    /// and its last events. Every line is escaped for a terminal.
    public func summaryLines(file: String? = nil) -> [String] {
        var lines: [String] = []
        func field(_ label: String, _ values: [String]) {
            for (index, value) in values.enumerated() {
                let head = index == 0 ? label : ""
                lines.append(head.padding(toLength: 12, withPad: " ", startingAt: 0) + value)
            }
        }
        let clock = HostEvent.isoFormatter
        lines.append("\(name) (\(app)), pid \(pid)")
        field("ended", ["\(clock.string(from: time)), \(seconds(time.timeIntervalSince(launchedAt))) after its launch, in state \(state.rawValue)"])
        field("why", ["\(namespace)\(code.map { " " + $0 } ?? "") (\(kind)): \(reason)"])
        field("process", [Self.processLine(signal: signal, exitStatus: exitStatus, crash: crash)])
        if let fatalError { field("fatal error", [fatalError]) }
        if !held.isEmpty { field("held", held.map(\.summary)) }
        if violationCount > 0 {
            let latest = violations.suffix(3).map { "\($0.call) (\($0.state.rawValue)\($0.fatal ? ", fatal" : ""))" }
            field("sandbox", ["\(violationCount) refused system call\(violationCount == 1 ? "" : "s"); latest: \(latest.joined(separator: ", "))"])
        }
        var use = [
            "CPU \(seconds(usage.cpuForegroundSeconds)) foreground, \(seconds(usage.cpuBackgroundSeconds)) background",
            "memory \(usage.memoryBytes.mebibytes), peak \(usage.peakMemoryBytes.mebibytes) (maximum resident \(usage.maximumResidentBytes.mebibytes))",
        ]
        var background = "\(usage.openBackgroundTasks) open background task\(usage.openBackgroundTasks == 1 ? "" : "s")"
        if let remaining = usage.backgroundTimeRemainingSeconds { background += ", \(seconds(remaining)) of background time left" }
        background += ", \(usage.backgroundWakeups) background wake-up\(usage.backgroundWakeups == 1 ? "" : "s")"
        if let modes = usage.keptRunningBy, !modes.isEmpty {
            background += ", kept running by \(modes.map(\.rawValue).joined(separator: ", "))"
        }
        use.append(background)
        if let bytes = usage.storageBytes {
            use.append("storage \(bytes.mebibytes)\(usage.storageLimitBytes.map { " of \($0.mebibytes)" } ?? "")\(usage.storageMechanism.map { " (\($0))" } ?? "")")
        }
        use.append("\(seconds(usage.timeInStateSeconds)) in its last state")
        field("usage", use)
        if let backtrace {
            let role = backtrace.role == "crashed" ? "the crashed thread" : "the main thread at the kill"
            let name = backtrace.thread.name.isEmpty ? "" : " \"\(backtrace.thread.name)\""
            lines.append("backtrace   \(role): thread \(backtrace.thread.id)\(name)\(backtrace.thread.isMain ? " (main)" : "")\(backtrace.signal.map { ", \($0)" } ?? "")")
            lines += backtrace.frames.prefix(Self.summaryFrames).map { "  " + $0.line }
            if backtrace.frames.count > Self.summaryFrames {
                lines.append("  … \(backtrace.frames.count - Self.summaryFrames) more frames (--json shows them all)")
            }
        } else if let backtraceUnavailable {
            field("backtrace", ["none: \(backtraceUnavailable)"])
        }
        if !lastEvents.isEmpty {
            lines.append("last events")
            for event in lastEvents {
                var line = "  \(clock.string(from: event.time))  \(event.event)"
                if let state = event.state { line += " → \(state.rawValue)" }
                if let detail = event.detail, !detail.isEmpty { line += "  \(detail.replacingOccurrences(of: "\n", with: " ⏎ "))" }
                lines.append(line)
            }
        }
        field("bundle", [bundle])
        if let file { field("report", [file]) }
        return lines.map { TerminalText.escaping($0) }
    }

    /// A listing's columns: time, app, pid, namespace and code, kind (the file's name goes
    /// after them, then the reason, last because it is long).
    public var listingFields: [String] {
        [HostEvent.isoFormatter.string(from: time), name, String(pid), "\(namespace) \(code ?? "-")", kind]
    }

    /// Frames of a backtrace the summary shows.
    static let summaryFrames = 16

    private func seconds(_ value: Double) -> String { String(format: "%.3f s", value) }
}

extension TerminationReport.Held {
    /// "background task #3 \"upload\"", "POSIX write lock 0-EOF on /path (pid 3, fd 7)".
    var summary: String {
        let owner = [pid.map { "pid \($0)" }, fd.map { "fd \($0)" }].compactMap { $0 }.joined(separator: ", ")
        let suffix = owner.isEmpty ? "" : " (\(owner))"
        if let backgroundTask { return "background task \(backgroundTask)" }
        if let lock { return "\(lock.kind) \(lock.type) lock \(lock.range) on \(path ?? "?")\(suffix)" }
        if let sharedResource { return "shared resource \(sharedResource), open as \(path ?? "?")\(suffix)" }
        return (path ?? "?") + suffix
    }
}
