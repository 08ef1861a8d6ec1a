#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostProtocol
import AppHostSystem
@_implementationOnly import CAppHostEpoll

/// The app process's end of its control socket, read on a thread of its own, which waits on the
/// socket, decodes each message and hands it over (`deliver`: AppMain puts it on the main queue,
/// where it runs, in order); a `withdraw` is taken at once, on this thread, not after the
/// callback the main thread may be running. A Dispatch read source on the main queue cost two
/// more thread wake-ups per message (Dispatch's manager thread woke to see the socket readable,
/// and again to re-arm the source once its handler had run on the main thread), and its decoding
/// was done on the main thread.
///
/// It owns what tells the host's end of the connection from the app's own doing: the socket's
/// device and inode, taken before the app's code runs (the thread may begin after the app closed
/// its descriptor 3).
struct HostMessageReader: Sendable {
    private let fd: Int32
    private let socket: (dev_t, ino_t)?

    init(fd: Int32) {
        self.fd = fd
        socket = Self.identity(of: fd)
    }

    /// Starts the reading thread.
    func start(withdraw: @escaping @Sendable (UInt64) -> Void, deliver: @escaping @Sendable (HostMessage) -> Void) {
        let reader = Thread {
            var receiver = FrameReceiver(channel: ControlChannel(fd: fd))
            // Waits in epoll, never in a read or poll on the socket: those hold the socket open
            // while they wait, so an app that closed its descriptor 3 would keep the connection
            // open and the host would not see it close. An epoll set holds no reference.
            let epoll = apphost_epoll_create()
            guard epoll >= 0, apphost_epoll_add(epoll, fd, 0) == 0 else {
                guard isStill() else { return }  // the app closed it first: the host sees it
                Self.end("AppHostKit: cannot wait on the control socket (errno \(errno))\n", status: 70)
                return
            }
            var key: UInt64 = 0
            while true {
                if apphost_epoll_wait(epoll, &key, 1) < 0 {
                    if errno == EINTR { continue }
                    return
                }
                let batch = receiver.receive(budget: .max)
                if batch.frames.isEmpty && batch.end == nil { continue }
                for frame in batch.frames {
                    do {
                        let message = try WireCoding.decode(HostMessage.self, from: frame.body)
                        if case .withdraw(let id) = message {
                            withdraw(id)
                        } else {
                            deliver(message)
                        }
                    } catch {
                        Self.end("AppHostKit: unreadable message from the host: \(error)\n", status: 70)
                        return
                    }
                }
                switch batch.end {
                case nil: continue
                case .closed where isStill():
                    Self.end(nil, status: 0)  // the host closed the connection: it is ending this app
                case _ where !isStill():
                    // The app closed the socket itself (or reused its number), which a read may
                    // find as its end or as EBADF: reading stops, and the host, which sees the
                    // socket close, ends the app for it (not this process, whose exit would
                    // hide why).
                    break
                case let failure?: Self.end("AppHostKit: unreadable message from the host: \(failure)\n", status: 70)
                }
                return
            }
        }
        reader.name = "apphost-control"
        reader.start()
    }

    /// The device and inode of the file `fd` is, nil if it is not open.
    private static func identity(of fd: Int32) -> (dev_t, ino_t)? {
        var info = stat()
        return fstat(fd, &info) == 0 ? (info.st_dev, info.st_ino) : nil
    }

    /// Whether the descriptor is still the control socket: then its end of stream (or error) is
    /// the host's doing; else the app closed its descriptor 3 (or reused the number).
    private func isStill() -> Bool {
        guard let socket, let now = Self.identity(of: fd) else { return false }
        return now == socket
    }

    /// Ends the process once the main queue has run what came before.
    private static func end(_ message: String?, status: Int32) {
        DispatchQueue.main.async {
            if let message { writeStandardError(message) }
            _exit(status)
        }
    }
}
