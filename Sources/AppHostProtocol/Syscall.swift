#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: the call's name, what it was applied to, and the errno it left.
package struct SystemCallError: Error, CustomStringConvertible, Equatable {
    package var call: String
    package var errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var description: String {
        "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Runs a libc call that returns -1 and sets errno on failure, reading errno at once and retrying
/// on EINTR. Never use it for `close`, which must not be retried.
@discardableResult
package func valueOrErrno<Result: FixedWidthInteger>(
    _ call: @autoclosure () -> String, _ body: () -> Result
) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Glibc.errno
        if error == EINTR { continue }
        throw SystemCallError(call(), errno: error)
    }
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
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && Glibc.errno == EINTR { continue }
        if written <= 0 { return }
        offset += written
    }
}
