public import Foundation

/// One termination report (docs/reports.md, "Termination codes and reports"): the file the host writes for
/// every app process that ends, and what `apphost reports` reads. Codable as the file is.
public struct TerminationReport: Codable, Sendable, Equatable {
    public var app: String
    public var name: String
    /// The bundle's path.
    public var bundle: String
    public var pid: Int32
    public var time: Date
    public var launchedAt: Date
    /// The state the app was in at its end (inside a callback: the state it observed there).
    public var state: AppState
    /// The termination: `kind`, `namespace`, `code` (hex, or a signal or status number) and
    /// the one-line `reason`.
    public var kind: String
    public var namespace: String
    public var code: String?
    public var reason: String
    /// Whether the app crashed or exited by itself (not ended by the host).
    public var crash: Bool
    /// The exit status or the signal, whichever ended the process.
    public var exitStatus: Int32?
    public var signal: String?
    /// What it held: open background tasks, locks and shared resources (0xdead10cc).
    public var held: [Held]
    public var violationCount: Int
    /// The latest refused system calls (at most 32).
    public var violations: [Violation]
    public var usage: Usage
    /// The last life-cycle events (at most 32).
    public var lastEvents: [Event]
    /// For a crash: the message the Swift runtime printed just before it ("Probe/AppDelegate.swift:42:
    /// Fatal error: Unexpectedly found nil while unwrapping an Optional value"), read from the app's
    /// output, as iOS puts it under "Application Specific Information". The app's own account.
    public var fatalError: String?
    /// For a crash, the crashed thread's backtrace; for a watchdog kill (0x8badf00d), the main
    /// thread's at the moment of the kill. Absent from reports written before backtraces.
    public var backtrace: Backtrace?
    /// Why a crash or watchdog report has no backtrace ("the app process did not answer the
    /// sample signal within 100 ms").
    public var backtraceUnavailable: String?

    public struct Held: Codable, Sendable, Equatable {
        public struct Lock: Codable, Sendable, Equatable {
            public var kind: String
            public var type: String
            public var range: String
        }

        /// An open background task, "#3 \\"upload\\"".
        public var backgroundTask: String?
        public var path: String?
        public var pid: Int32?
        public var fd: Int32?
        public var lock: Lock?
        /// The declared shared resource it had open.
        public var sharedResource: String?
    }

    public struct Violation: Codable, Sendable, Equatable {
        public var time: Date
        public var call: String
        public var state: AppState
        public var fatal: Bool
    }

    public struct Usage: Codable, Sendable, Equatable {
        public var timeInStateSeconds: Double
        public var cpuForegroundSeconds: Double
        public var cpuBackgroundSeconds: Double
        public var memoryBytes: UInt64
        public var peakMemoryBytes: UInt64
        public var maximumResidentBytes: UInt64
        public var openBackgroundTasks: Int
        /// The continuous modes that kept it running at its end (absent from reports written
        /// before the continuous modes).
        public var keptRunningBy: [ContinuousMode]?
        public var backgroundWakeups: Int
        public var violations: Int
        public var backgroundTimeRemainingSeconds: Double?
        /// Disk space of its container and app groups at its end, and the limits that held them
        /// (absent from reports written before storage was accounted).
        public var storageBytes: UInt64?
        public var storageLimitBytes: UInt64?
        public var storageMechanism: String?
        public var storage: [StoragePart]?
        /// Its background URL session transfers when it ended, which go on without it (absent
        /// from reports written before transfers).
        public var transfers: [TransferListing]?
    }

    /// One thread's backtrace, captured inside the app process by apphost's handlers (installed
    /// by the runner before the plugin loads) and symbolized by the host against the memory map
    /// it read itself. App code shares that process and could send a backtrace of its own: it is
    /// the app's account (`capturedBy`), and never decides the report's kind or code.
    public struct Backtrace: Codable, Sendable, Equatable {
        public struct Thread: Codable, Sendable, Equatable {
            /// The thread's id as the app process sees it (in its PID namespace).
            public var id: Int32
            public var name: String
            public var isMain: Bool
        }

        public struct Frame: Codable, Sendable, Equatable {
            public var index: Int
            /// The image's file name ("libNotesExample.so", "libswiftCore.so"), "???" if unknown.
            public var image: String
            public var imagePath: String?
            /// The address in the process, hex.
            public var address: String
            /// The address in the image's own address space, hex, for `addr2line -e IMAGE`.
            public var imageAddress: String?
            /// The function, demangled where it is Swift ("Notes.AppDelegate.save()").
            public var symbol: String?
            /// Bytes from the function's start.
            public var symbolOffset: UInt64?
            /// Whether the image is the app's own plugin (its bundle), not the system's.
            public var isApp: Bool
            /// The frame as a crash report prints it: "0  libNotesExample.so  0x00007f…  Notes.AppDelegate.save() + 36".
            public var line: String
        }

        /// "crashed" (the thread that crashed) or "main-at-kill" (the main thread, sampled by a watchdog).
        public var role: String
        public var thread: Thread
        /// For a crash: the signal the thread crashed with, and the faulting address where there is one.
        public var signal: String?
        public var faultAddress: String?
        /// "unwind-tables" (.eh_frame, through libc and the signal frame) or "frame-pointers".
        public var unwinder: String
        /// Whether deeper frames were cut (at most 128 are kept).
        public var truncated: Bool
        /// "app-process": the app's own account (see the type's summary).
        public var capturedBy: String
        /// Why the frames name no image or symbol, when the host could not read the memory map.
        public var imagesUnavailable: String?
        public var frames: [Frame]
    }

    public struct Event: Codable, Sendable, Equatable {
        public var time: Date
        public var event: EventName
        public var state: AppState?
        public var detail: String?
    }

    init(_ contents: ReportStore.Contents) {
        app = contents.bundle.identifier
        name = contents.bundle.name
        bundle = contents.bundle.url.path
        pid = contents.pid
        time = contents.time
        launchedAt = contents.launchedAt
        state = contents.finalState
        kind = contents.termination.kind.rawValue
        namespace = contents.termination.namespace.rawValue
        code = contents.termination.formattedCode
        reason = contents.termination.reason
        crash = contents.termination.isCrash
        switch contents.exit.status {
        case .exited(let status): exitStatus = status
        case .signaled(let number, _): signal = signalName(number)
        }
        held = contents.openBackgroundTasks.map { Held(backgroundTask: $0) } + contents.held.map { held in
            var entry = Held(path: held.path, pid: held.pid, fd: held.fd)
            switch held.what {
            case .lock(let lock): entry.lock = Held.Lock(kind: lock.kind, type: lock.type, range: lock.range)
            case .sharedResource(let declared): entry.sharedResource = declared
            }
            return entry
        }
        violationCount = contents.violationCount
        violations = contents.violations.map { Violation(time: $0.time, call: $0.call, state: $0.state, fatal: $0.fatal) }
        usage = Usage(
            timeInStateSeconds: contents.timeInState.seconds, cpuForegroundSeconds: contents.cpuForeground.seconds,
            cpuBackgroundSeconds: contents.cpuBackground.seconds, memoryBytes: contents.memory, peakMemoryBytes: contents.peakMemory,
            maximumResidentBytes: contents.exit.maximumResidentBytes, openBackgroundTasks: contents.openBackgroundTasks.count,
            keptRunningBy: contents.keptRunningBy, backgroundWakeups: contents.backgroundWakeups, violations: contents.violationCount,
            backgroundTimeRemainingSeconds: contents.backgroundTimeRemaining?.seconds,
            storageBytes: contents.storage?.bytes, storageLimitBytes: contents.storage?.limitBytes,
            storageMechanism: contents.storage?.mechanism.rawValue, storage: contents.storage?.parts,
            transfers: contents.transfers)
        lastEvents = contents.lastEvents
        fatalError = contents.fatalError
        backtrace = contents.backtrace
        backtraceUnavailable = contents.backtraceUnavailable
    }

    /// The report as its file holds it: pretty-printed, keys sorted, ISO 8601 times; or, not
    /// `pretty`, on one line (`apphost reports --json`'s listing).
    public func encoded(pretty: Bool = true) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(HostEvent.isoFormatter.string(from: date))
        }
        return try encoder.encode(self)
    }

    public static func decoded(from data: Data) throws -> TerminationReport {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = HostEvent.isoFormatter.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 time: \(text)")
            }
            return date
        }
        return try decoder.decode(TerminationReport.self, from: data)
    }
}
