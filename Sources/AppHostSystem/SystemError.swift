#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
@_implementationOnly import SystemPackage

// The one errno path: every libc call that can fail goes through one of the helpers below, which
// read errno at once (before anything else can change it) and retry EINTR. C libraries follow
// their own conventions: libseccomp returns negative errno values and sets nothing
// (`negativeErrno`); libcap returns -1 or NULL and sets errno (`valueOrErrno`, `pointerOrErrno`).
// An errno becomes words only through swift-system's `Errno` (`errnoText`).

/// A failed system call: the call's name, what it was applied to, and the errno it left.
package struct SystemError: Error, CustomStringConvertible, Equatable {
    package var call: String
    package var errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var description: String {
        "\(call): \(errnoText(errno)) (errno \(errno))"
    }
}

/// What an errno value means, in words ("No such file or directory"), by swift-system's `Errno`.
/// Read `errno` into the argument at once: anything called before may change it.
package func errnoText(_ value: Int32) -> String {
    Errno(rawValue: value).description
}

/// Runs a libc call that returns -1 and sets errno on failure, reading errno at once and retrying
/// on EINTR. Never use it for `close`, which must not be retried.
@discardableResult
package func valueOrErrno<Result: FixedWidthInteger>(
    _ call: @autoclosure () -> String, _ body: () -> Result
) throws(SystemError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Glibc.errno
        if error == EINTR { continue }
        throw SystemError(call(), errno: error)
    }
}

/// Runs a C call that returns NULL and sets errno on failure (libcap's `cap_init`…).
package func pointerOrErrno<Pointer>(_ call: @autoclosure () -> String, _ body: () -> Pointer?) throws(SystemError) -> Pointer {
    guard let pointer = body() else { throw SystemError(call(), errno: Glibc.errno) }
    return pointer
}

/// Checks a libseccomp result: 0 or more is success, a negative value is `-errno`.
package func negativeErrno(_ call: @autoclosure () -> String, _ result: Int32) throws(SystemError) {
    guard result >= 0 else { throw SystemError(call(), errno: -result) }
}

/// Closes a file descriptor once; EINTR is not retried (the descriptor is gone either way).
package func closeIgnoringErrors(_ fd: Int32) {
    _ = Glibc.close(fd)
}

/// Writes text to standard error with one write(2): safe from any thread, and unbuffered, so
/// nothing is lost when the process ends right after.
package func writeStandardError(_ text: String) {
    writeStandardError(Array(text.utf8))
}

/// Writes bytes to standard error, retrying EINTR and short writes; dropped if it fails.
package func writeStandardError(_ bytes: [UInt8]) {
    _ = writeWhole(2, bytes)
}

/// Writes text to standard output the same way; false once it cannot be written (its reader is
/// gone: EPIPE, with SIGPIPE ignored).
package func writeStandardOutput(_ text: String) -> Bool {
    writeWhole(1, Array(text.utf8))
}

private func writeWhole(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && Glibc.errno == EINTR { continue }
        if written <= 0 { return false }
        offset += written
    }
    return true
}
