#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import AppHostRuntime

/// What SharedResourceCheck counts as a connection to a declared Unix socket (README.md,
/// "Resource rules"), with this test's own process holding the sockets.
@Suite struct SharedResourceCheckTests {
    /// A connection the declared socket's listener has not accepted yet is held, as much as one it
    /// has: the service is slow to accept, the app is connected all the same. Its far end has no
    /// inode until it is accepted, so a check that follows only the peer misses it (the flake of
    /// SharedResourceTests' `aConnectionToADeclaredSocketAtSuspensionIsFatal` on a loaded
    /// machine, where the test's server thread had not run `accept` yet). A connection waiting
    /// on a listener that is not declared is not held.
    @Test func aConnectionNotYetAcceptedByADeclaredSocketIsHeld() throws {
        let files = TemporaryFiles()
        let declared = try files.url("shared.sock").path, other = try files.url("other.sock").path
        let listener = try listen(at: declared), otherListener = try listen(at: other)
        defer { close(listener); close(otherListener) }
        let check = SharedResourceCheck(groupsDirectory: "/nonexistent", declared: [declared])
        #expect(check.held(by: [getpid()]).map(\.fd) == [listener], "bound there itself")

        let pending = try connect(to: declared), elsewhere = try connect(to: other)
        defer { close(pending); close(elsewhere) }
        let held = check.held(by: [getpid()])
        #expect(held.map(\.fd).sorted() == [listener, pending].sorted())
        #expect(held.first { $0.fd == pending }?.what == .sharedResource(declared: declared))

        let accepted = accept(listener, nil, nil)
        try #require(accepted >= 0)
        defer { close(accepted) }
        #expect(check.held(by: [getpid()]).map(\.fd).sorted() == [listener, pending, accepted].sorted(), "accepted: followed by its peer")
    }

    private func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        return address
    }

    /// A stream socket listening at `path`, which accepts nothing until the test does.
    private func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(fd >= 0 && bound == 0 && Glibc.listen(fd, 8) == 0, "cannot listen on \(path): errno \(errno)")
        return fd
    }

    /// A stream socket connected to `path`: the connection waits on the listener's queue.
    private func connect(to path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(fd >= 0 && connected == 0, "cannot connect to \(path): errno \(errno)")
        return fd
    }
}
