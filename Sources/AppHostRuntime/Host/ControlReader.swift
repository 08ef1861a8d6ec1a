#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Dispatch
import AppHostSystem
import CAppHostEpoll
import CAppHostShims

/// The host's reader of the apps' control sockets: one thread that waits on all of them (epoll)
/// and runs each ready socket's handler on the supervisor's queue, with `queue.sync`.
///
/// A Dispatch read source per socket took three thread wake-ups per message: Dispatch's manager
/// thread saw the socket readable, a worker thread woke to drain the supervisor's queue, and the
/// manager woke again to re-arm the source. Here the one thread that waits runs the handler
/// itself: `sync` on the idle queue runs the block on the calling thread, holding the queue, so
/// everything the supervisor owns is still touched only on its queue, one input at a time.
///
/// The sockets are level-triggered: a handler that leaves data unread (its per-turn budget) is
/// called again on the next pass, after the queue's other work.
final class ControlReader: @unchecked Sendable {
    private let queue: DispatchQueue
    private let epoll: Int32
    /// Written to stop the thread.
    private let stopEvent: Int32
    /// The handlers by key (epoll carries the key, never the descriptor, so an event that was
    /// waiting when its socket was unwatched finds nothing). Touched on the queue only.
    private var handlers: [UInt64: () -> Void] = [:]
    private var nextKey: UInt64 = 1
    private var thread: Thread?
    private static let stopKey: UInt64 = 0

    init(queue: DispatchQueue) throws(SystemError) {
        self.queue = queue
        let epoll = try valueOrErrno("epoll_create1") { apphost_epoll_create() }
        let stopEvent = apphost_eventfd()
        guard stopEvent >= 0, apphost_epoll_add(epoll, stopEvent, Self.stopKey) == 0 else {
            let error = SystemError(stopEvent < 0 ? "eventfd" : "epoll_ctl", errno: errno)
            if stopEvent >= 0 { closeIgnoringErrors(stopEvent) }
            closeIgnoringErrors(epoll)
            throw error
        }
        self.epoll = epoll
        self.stopEvent = stopEvent
    }

    deinit {
        closeIgnoringErrors(epoll)
        closeIgnoringErrors(stopEvent)
    }

    /// Calls `handler` on the queue whenever `fd` is readable, until `unwatch`. On the queue.
    func watch(_ fd: Int32, handler: @escaping () -> Void) -> UInt64? {
        let key = nextKey
        nextKey += 1
        guard apphost_epoll_add(epoll, fd, key) == 0 else { return nil }
        handlers[key] = handler
        if thread == nil { start() }
        return key
    }

    /// Stops watching `fd` (before it is closed). On the queue.
    func unwatch(_ key: UInt64, fd: Int32) {
        handlers[key] = nil
        _ = apphost_epoll_remove(epoll, fd)
    }

    /// Ends the thread (the supervisor is going). Idempotent.
    func stop() {
        var one: UInt64 = 1
        _ = write(stopEvent, &one, 8)
    }

    private func start() {
        let thread = Thread { [self] in run() }
        thread.name = "apphost-control"
        thread.start()
        self.thread = thread
    }

    private func run() {
        var ready = [UInt64](repeating: 0, count: 64)
        while true {
            let count = ready.withUnsafeMutableBufferPointer { apphost_epoll_wait(epoll, $0.baseAddress, Int32($0.count)) }
            if count < 0 { if errno == EINTR { continue } else { return } }
            let keys = Array(ready.prefix(Int(count)))
            if keys.contains(Self.stopKey) { return }
            queue.sync {
                for key in keys {
                    let handler = handlers[key]
                    handler?()
                }
            }
        }
    }
}
