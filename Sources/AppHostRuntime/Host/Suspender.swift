#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import AppHostSystem

/// How the host stops every thread of an app.
public enum SuspensionMechanism: String, Sendable {
    /// Writes 1 to the app's `cgroup.freeze` and waits for `frozen 1` in `cgroup.events`.
    case cgroupFreezer = "cgroup v2 freezer"
    /// Sends SIGSTOP and waits until every thread in /proc/PID/task is stopped.
    case sigstop = "SIGSTOP"
}

/// Stops and restarts every thread of an app process, and says when every thread has stopped.
///
/// A freeze is verified, never assumed: `verified` runs on the host's queue once the kernel
/// reports every thread stopped, within `freeze` if it already does (the host hears it as an
/// input of its own, `HostInput.frozen`). One that never stops is never verified; the
/// life-cycle machine's suspend deadline ends that app. Nothing here waits: later looks are on
/// the host's timer. Used only on the host's queue.
protocol Suspender: AnyObject, Sendable {
    /// Starts stopping every thread of `process`. `isWanted` says whether the host still waits
    /// for this freeze (it stops waiting when the app ends or the machine gives up).
    func freeze(_ process: AppProcess, isWanted: @escaping @Sendable () -> Bool, verified: @escaping @Sendable () -> Void)
    func thaw(_ process: AppProcess)
    /// The process ended: drop whatever the suspender kept for it.
    func forget(_ process: AppProcess)
}

/// The cgroup v2 freezer: every thread and child at once, confirmed by `cgroup.events`. An app
/// without a group of its own (or whose group refuses to freeze) is stopped by SIGSTOP instead.
final class CgroupFreezer: Suspender, @unchecked Sendable {
    private let watcher: CgroupEventWatcher
    private let timers: HostTimers
    private let fallback: SignalStopper
    /// The inotify watch of each group being frozen, by path.
    private var watches: [String: Int32] = [:]

    init?(queue: DispatchQueue, timers: HostTimers) {
        guard let watcher = CgroupEventWatcher(queue: queue) else { return nil }
        self.watcher = watcher
        self.timers = timers
        fallback = SignalStopper(timers: timers)
    }

    func freeze(_ process: AppProcess, isWanted: @escaping @Sendable () -> Bool, verified: @escaping @Sendable () -> Void) {
        guard let group = process.cgroup else {
            fallback.freeze(process, isWanted: isWanted, verified: verified)
            return
        }
        // Watched before the freeze is asked for: a freeze that completes between a check and
        // the watch would otherwise never be reported.
        let watch = watcher.watch(group.path + "/cgroup.events") { [weak self] in
            guard group.isFrozen else { return }
            self?.unwatch(group)
            if isWanted() { verified() }
        }
        if let watch { watches[group.path] = watch }
        guard (try? group.write("cgroup.freeze", "1")) != nil else {
            // The group refuses to freeze: stop the threads by signal instead.
            unwatch(group)
            fallback.freeze(process, isWanted: isWanted, verified: verified)
            return
        }
        confirm(group, check: 0, watched: watch != nil, isWanted: isWanted, verified: verified)
    }

    /// Looks at `frozen 1` on the host's timer, never holding the loop. Freezing takes about
    /// 0.1 ms, but the kernel sends cgroup.events notifications at most once per 10 ms: the
    /// group is looked at every 50 µs for the first 2 ms, which confirms the common case at
    /// once; then the notification says it, or, where inotify cannot watch the group, a look
    /// every millisecond.
    private func confirm(
        _ group: Cgroup, check: Int, watched: Bool, isWanted: @escaping @Sendable () -> Bool, verified: @escaping @Sendable () -> Void
    ) {
        guard isWanted() else { return }
        if group.isFrozen {
            unwatch(group)
            verified()
            return
        }
        let early = check < Self.earlyChecks
        guard early || !watched else { return }
        timers.after(early ? .microseconds(50) : .milliseconds(1)) { [weak self] in
            self?.confirm(group, check: check + 1, watched: watched, isWanted: isWanted, verified: verified)
        }
    }

    /// The looks at the group in its first 2 ms.
    private static let earlyChecks = 40

    func forget(_ process: AppProcess) {
        if let group = process.cgroup { unwatch(group) }
    }

    func thaw(_ process: AppProcess) {
        if let group = process.cgroup {
            unwatch(group)
            try? group.write("cgroup.freeze", "0")
        }
        // Continues it too if the freeze fell back to SIGSTOP (harmless otherwise).
        fallback.thaw(process)
    }

    private func unwatch(_ group: Cgroup) {
        if let watch = watches.removeValue(forKey: group.path) { watcher.unwatch(watch) }
    }
}

/// SIGSTOP, for hosts without the freezer (and apps whose group could not be made). The signal
/// takes effect thread by thread, so every thread's state is checked until all are stopped.
final class SignalStopper: Suspender, @unchecked Sendable {
    private let timers: HostTimers

    init(timers: HostTimers) { self.timers = timers }

    func freeze(_ process: AppProcess, isWanted: @escaping @Sendable () -> Bool, verified: @escaping @Sendable () -> Void) {
        process.signal(SIGSTOP)
        check(process, attempt: 0, isWanted: isWanted, verified: verified)
    }

    func thaw(_ process: AppProcess) { process.signal(SIGCONT) }

    func forget(_ process: AppProcess) {}

    private func check(_ process: AppProcess, attempt: Int, isWanted: @escaping @Sendable () -> Bool, verified: @escaping @Sendable () -> Void) {
        guard isWanted(), !process.isClosed else { return }
        if ProcFS.allThreadsStopped(pid: process.pid) {
            verified()
            return
        }
        timers.after(.microseconds(attempt < 100 ? 20 : 500)) { [weak self] in
            self?.check(process, attempt: attempt + 1, isWanted: isWanted, verified: verified)
        }
    }
}

extension Cgroup {
    /// Whether the kernel reports every task of the group frozen (`frozen 1` in cgroup.events).
    var isFrozen: Bool { read("cgroup.events").split(separator: "\n").contains("frozen 1") }

}

/// Watches cgroup.events files with one inotify descriptor, so a freeze is confirmed the moment
/// the kernel reports it, with no polling.
final class CgroupEventWatcher {
    private let fd: Int32
    private let source: any DispatchSourceRead
    private var handlers: [Int32: () -> Void] = [:]

    init?(queue: DispatchQueue) {
        guard let fd = try? valueOrErrno("inotify_init1", { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }) else { return nil }
        self.fd = fd
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.drain() }
        source.setCancelHandler { closeIgnoringErrors(fd) }
        source.resume()
    }

    deinit { source.cancel() }

    /// Calls `handler` on the queue each time `path` changes; returns the watch to remove later.
    func watch(_ path: String, handler: @escaping () -> Void) -> Int32? {
        guard let descriptor = try? valueOrErrno("inotify_add_watch", { inotify_add_watch(fd, path, UInt32(IN_MODIFY)) }) else { return nil }
        handlers[descriptor] = handler
        return descriptor
    }

    func unwatch(_ descriptor: Int32) {
        handlers[descriptor] = nil
        inotify_rm_watch(fd, descriptor)
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fired = Set<Int32>()
        while case .bytes(let count) = readSome(fd, into: &buffer) {
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                fired.insert(event.wd)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        for descriptor in fired { handlers[descriptor]?() }
    }
}
