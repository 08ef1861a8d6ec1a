// For struct stat's members (HostSession.swift says why).
import CDispatch
import AppHostSystem
import CAppHostShims
import Foundation
import Testing

/// The control socket's connections against a real host: served from readiness on one queue,
/// not a thread each, so that clients that say nothing, stop reading or vanish cost the host no
/// thread and hold up no other client, nor the host's own output.
extension ControlPlaneTests {
    /// Fifty clients that connect and say nothing: a thread each would add fifty to the host's.
    /// Another client's command is answered meanwhile, and each silent one is let go in time.
    @Test func silentConnectionsTakeNoThreadOfTheirOwn() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let pid = host.process.processIdentifier
        let state = ["ctl", "--state-dir", scratch.stateDirectory.path]
        // A first command starts whatever threads a command needs.
        #expect(try runApphost(state + ["ps"]).status == 0)
        let threads = threadCount(pid)

        let silent = try (0..<50).map { _ in try connectToHost(scratch) }
        defer { silent.forEach { close($0) } }
        try waitUntil("the host holds the 50 connections") {
            (try? hostSides(silent)).flatMap { $0?.isSubset(of: openSockets(pid)) } ?? false
        }
        let ps = try runApphost(state + ["ps"])
        #expect(ps.status == 0)
        #expect(ps.output.contains("\"Hello\""), "\(ps)")
        let during = threadCount(pid)
        #expect(during < threads + 10, "\(threads) threads before 50 silent connections, \(during) with them")
        // After 10 s of silence, each is told so and closed.
        for fd in silent { #expect(try readToEnd(fd) == Self.unreadable) }
    }

    /// A request that is not one, one longer than 16 KiB, and one cut short by the end of the
    /// client's input are each answered (status 2) and closed; the end of a client's input after
    /// a whole request is not a hang-up.
    @Test func requestsTheHostCannotReadAreAnsweredAndClosed() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let key = try controlKey(scratch)
        for (request, cutShort) in [(key + "bogus\n", false), (String(repeating: "x", count: 20_000), false), (key + "run ps", true)] {
            let fd = try connectToHost(scratch)
            defer { close(fd) }
            #expect(sendText(fd, request))
            if cutShort { shutdown(fd, Int32(SHUT_WR)) }
            #expect(try readToEnd(fd) == Self.unreadable, "request \(request.prefix(20))")
        }
        // A client that shuts its writing side once it has asked still gets its answer.
        let fd = try connectToHost(scratch)
        defer { close(fd) }
        #expect(sendText(fd, key + "run ps\n"))
        shutdown(fd, Int32(SHUT_WR))
        let answer = try readToEnd(fd)
        #expect(answer.hasPrefix("1 {") && answer.contains("\"Hello\"") && answer.hasSuffix("\n= 0\n"), "\(answer)")
    }

    /// A request without the host's control key (what an app that shares the host's user could
    /// send, README.md "What an app can reach through the host") is refused, and runs nothing.
    @Test func aRequestWithoutTheControlKeyIsRefused() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let key = scratch.stateDirectory.appendingPathComponent("control/host.key")
        var info = stat()
        #expect(stat(key.path, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_uid == geteuid())
        for request in ["run terminate Hello\n", String(repeating: "0", count: 64) + " run terminate Hello\n"] {
            let fd = try connectToHost(scratch)
            defer { close(fd) }
            #expect(sendText(fd, request))
            let answer = try readToEnd(fd)
            #expect(answer.hasPrefix("2 apphost: the request did not begin with this host's control key") && answer.hasSuffix("\n= 2\n"), "\(answer)")
        }
        host.send("ps")
        try host.waitFor("ps") { $0.event == "ps" }
        #expect(!host.allEvents.contains { $0.event == "terminated" })
        host.closeInput()
        try host.waitFor("Hello", "terminated")
        // Gone with its host.
        try waitUntil("the key is removed") { access(key.path, F_OK) != 0 }
    }

    /// A follower that stops reading while 12,000 events go out holds up neither another
    /// follower, nor another client's command, nor the host's own output; once it reads, it gets
    /// the newest 10,000 and is told how many it missed.
    @Test(.timeLimit(.minutes(3)))
    func aFollowerThatStopsReadingHoldsUpNothingAndIsToldWhatItMissed() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let stuck = try RawFollower(scratch)
        let reading = try RawFollower(scratch)
        reading.startReading()
        // Until both are known to follow, each event may go unseen.
        try waitUntil("both followers have been sent an event") {
            host.send("advance 1")
            return queuedBytes(stuck.fd) > 0 && reading.lineCount > 0
        }

        // Far more than the socket holds (about 200 KiB), and more than the 10,000 lines a
        // follower may have waiting. The other follower reads them all as they come.
        for _ in 0..<12_000 { host.send("advance 1") }
        host.send("advance 7")
        let all = try reading.waitForLine(timeout: 120) { $0.contains(Self.lastAdvance) }
        // The host's own output is not held up either, nor another client's command.
        try host.waitFor("the last advance") { $0.event == "advance" && $0.detail?.contains(Self.lastAdvance) == true }
        let ps = try runApphost(["ctl", "--state-dir", scratch.stateDirectory.path, "ps"])
        #expect(ps.status == 0 && ps.output.contains("\"Hello\""), "\(ps)")

        // Once it reads, it gets the oldest lines the socket held, the number dropped, and the
        // newest 10,000, in order: together, every event the other follower saw.
        let queued = queuedBytes(stuck.fd)
        stuck.startReading()
        let caughtUp = try stuck.waitForLine(timeout: 60) { $0.contains(Self.lastAdvance) }
        #expect(queued < caughtUp.reduce(0) { $0 + $1.utf8.count + 1 }, "the host held back what the socket could not take")
        let notice = try #require(caughtUp.firstIndex { $0.hasPrefix("2 ") })
        let dropped = try #require(Int(caughtUp[notice].split(separator: " ")[2]), "\(caughtUp[notice])")
        #expect(caughtUp[notice] == "2 apphost: \(dropped) events dropped (this follower read too slowly)")
        #expect(caughtUp.count - notice - 1 == 10_000, "the newest 10,000 follow the notice")
        let events = caughtUp.filter { $0.hasPrefix("1 ") }
        #expect(events.count == caughtUp.count - 1, "one notice, and events")
        // It may have followed a little before the other: from the first line both saw on.
        let shared = Set(all)
        let skipped = try #require(events.firstIndex { shared.contains($0) })
        let first = try #require(all.firstIndex(of: events[skipped]))
        #expect(events.count - skipped + dropped == all.count - first, "with those dropped, all the other follower saw")
    }

    /// A follower that closes its connection is let go when the host sees the end of its input
    /// (not at a poll, nor at its next event), and nothing spins after.
    @Test func aFollowerThatHangsUpIsDroppedAtOnce() throws {
        let scratch = try Scratch()
        let host = try HostSession([Self.hello], scratch: scratch)
        try host.waitFor("Hello", "didBecomeActive")
        let pid = host.process.processIdentifier
        let state = ["ctl", "--state-dir", scratch.stateDirectory.path]
        let follower = try connectToHost(scratch)
        #expect(sendText(follower, try controlKey(scratch) + "events json\n"))
        try waitUntil("the follower has been sent an event") {
            _ = try? runApphost(state + ["advance", "1"])
            return queuedBytes(follower) > 0
        }
        let connection = try #require(try hostSides([follower])?.first)
        #expect(openSockets(pid).contains(connection))

        close(follower)
        try waitUntil("the host has closed the follower's connection") { !openSockets(pid).contains(connection) }
        #expect(try runApphost(state + ["advance", "1"]).status == 0)
        // The host does not spin: less than half a second of CPU over a second of idleness.
        let before = try #require(cpuTicks(pid))
        Thread.sleep(forTimeInterval: 1)  // the measured interval itself
        let after = try #require(cpuTicks(pid))
        #expect(after - before < sysconf(Int32(_SC_CLK_TCK)) / 2)
    }

    private static let unreadable = "2 apphost: unreadable control request\n= 2\n"
    private static let lastAdvance = "scheduler clock moved 7.0 s on"
}

/// A raw connection to the host's control socket, reached through its directory's descriptor
/// (the path may be too long for `sun_path`).
private func connectToHost(_ scratch: Scratch) throws -> Int32 {
    let directory = try valueOrErrno("open") {
        apphost_open_directory_path(scratch.stateDirectory.appendingPathComponent("control").path)
    }
    defer { close(directory) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { bytes in
        for (index, byte) in "/proc/self/fd/\(directory)/host.sock".utf8.enumerated() { bytes[index] = byte }
    }
    let fd = try valueOrErrno("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    do {
        try valueOrErrno("connect") {
            withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
    } catch {
        close(fd)
        throw error
    }
    return fd
}

/// A follower of every event (as JSON) on a raw connection, whose lines a thread of its own
/// reads once `startReading` is called: until then, the host sees a client that does not read.
private final class RawFollower: @unchecked Sendable {
    let fd: Int32
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    init(_ scratch: Scratch) throws {
        fd = try connectToHost(scratch)
        guard sendText(fd, try controlKey(scratch) + "events json\n") else {
            close(fd)
            throw SystemError("send", errno: errno)
        }
    }

    deinit { close(fd) }

    var lineCount: Int { condition.withLock { lines.count } }

    /// Reads until the host closes the connection (the host ends with its test); the thread
    /// holds the follower, and so its descriptor, until then.
    func startReading() {
        Thread.detachNewThread { [self] in
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while case .bytes(let count) = readSome(fd, into: &buffer) {
                pending += buffer[..<count]
                var complete: [String] = []
                while let newline = pending.firstIndex(of: 0x0A) {
                    complete.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = pending[(newline + 1)...]
                }
                condition.withLock { lines += complete }
                condition.broadcast()
            }
            condition.withLock { ended = true }
            condition.broadcast()
        }
    }

    /// The lines up to the first that satisfies `found` (each line is checked once).
    func waitForLine(timeout: Double, sourceLocation: SourceLocation = #_sourceLocation, _ found: (String) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        var checked = 0
        while true {
            if let index = lines[checked...].firstIndex(where: found) { return Array(lines[...index]) }
            checked = lines.count
            guard !ended, condition.wait(until: deadline) else {
                Issue.record("no such line among \(lines.count) within \(timeout) s; the last: \(lines.last ?? "none")", sourceLocation: sourceLocation)
                throw WaitFailed()
            }
        }
    }
}

/// Sends all of `text` (without SIGPIPE, should the host have closed the connection).
/// The running host's control key and the space after it, which begin every request.
private func controlKey(_ scratch: Scratch) throws -> String {
    let key = try String(contentsOf: scratch.stateDirectory.appendingPathComponent("control/host.key"), encoding: .utf8)
    return key.trimmingCharacters(in: .whitespacesAndNewlines) + " "
}

private func sendText(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        guard case .bytes(let count) = sendSome(fd, bytes) else { return false }
        bytes = bytes.dropFirst(count)
    }
    return true
}

/// How much a socket has received and not yet been read (up to 1 MiB), leaving it there.
private func queuedBytes(_ fd: Int32) -> Int {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    return max(0, buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) })
}

/// What comes next on a socket, waiting at most `timeout` seconds; empty at its end.
private func receive(_ fd: Int32, timeout: Double) throws -> Data {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard try valueOrErrno("poll", { poll(&entry, 1, Int32(timeout * 1000)) }) == 1 else {
        Issue.record("nothing to read within \(timeout) s")
        throw WaitFailed()
    }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    guard case .bytes(let count) = readSome(fd, into: &buffer) else { return Data() }
    return Data(buffer[..<count])
}

private func readToEnd(_ fd: Int32) throws -> String {
    var text = Data()
    while case let chunk = try receive(fd, timeout: 20), !chunk.isEmpty { text += chunk }
    return String(decoding: text, as: UTF8.self)
}

private func threadCount(_ pid: Int32) -> Int { directoryEntries("/proc/\(pid)/task").count }

/// The sockets a process holds, as /proc/PID/fd names them (`socket:[INODE]`).
private func openSockets(_ pid: Int32) -> Set<String> {
    Set(directoryEntries("/proc/\(pid)/fd").compactMap {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
    }.filter { $0.hasPrefix("socket:") })
}

/// The host's ends of connections to its control socket, as `openSockets` names them: the
/// peers of ours, from the kernel's list of Unix sockets. Nil until the host has accepted them
/// all (a connection waiting in the backlog has no inode yet).
private func hostSides(_ fds: [Int32]) throws -> Set<String>? {
    let ours = try fds.map { fd -> UInt64 in
        var status = stat()
        try valueOrErrno("fstat") { fstat(fd, &status) }
        return UInt64(status.st_ino)
    }
    var sockets = [apphost_unix_socket](repeating: apphost_unix_socket(), count: 1024)
    while true {
        let count = Int(try valueOrErrno("sock_diag") { apphost_list_unix_sockets(&sockets, Int32(sockets.count)) })
        if count <= sockets.count {
            let peers = Dictionary(sockets[..<count].map { (UInt64($0.inode), $0.peer) }) { first, _ in first }
            let theirs = ours.compactMap { peers[$0] }.filter { $0 != 0 }
            return theirs.count == ours.count ? Set(theirs.map { "socket:[\($0)]" }) : nil
        }
        sockets = [apphost_unix_socket](repeating: apphost_unix_socket(), count: count * 2)
    }
}

extension ControlPlaneTests {
    /// A host that is not root, without namespaces (docs/sandbox.md, "What an app can reach through the
    /// host"): its apps run as its own user, so the socket's uid check lets them connect. The
    /// control key, which Landlock keeps the app from reading, is what refuses them.
    @Test(.enabled(if: isRoot, "needs root, to run a host as another user (nobody)"))
    func anAppOfAHostThatIsNotRootCannotDriveIt() throws {
        let scratch = try Scratch()
        let nobody: uid_t = 65534
        chown(scratch.url.path, nobody, nobody)
        let control = scratch.stateDirectory.appendingPathComponent("control").path
        let app = try scratch.bundle(
            "Driver", behavior: ["sandboxProbes": ["drive-host"], "controlDirectory": control],
            changes: ["AppHostEntitlements": ["com.apple.security.network.client": true]])
        let host = try HostSession([app], scratch: scratch, arguments: ["--no-namespaces"], user: nobody)
        let sandboxed = try #require(try host.waitFor("Driver", "sandboxed").detail)
        #expect(sandboxed.hasSuffix("uid \(nobody)"), "the app runs as the host's own user: \(sandboxed)")
        try scratch.waitForRecorded("Driver", "probe drive-host: key EACCES, answer 2 apphost: the request did not begin with this host's control key (\(control)/host.key, which only its user and root can read, never its apps)")
        #expect(!host.allEvents.contains { $0.event == "ps" })
    }
}
