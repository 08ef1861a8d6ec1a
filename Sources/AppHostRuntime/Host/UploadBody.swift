#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// An upload's body, opened in the app's container as the host reads it (never through a link
/// planted after the check, and only a regular file), then copied into the host's state
/// directory file to file by the kernel (`copy_file_range`), never whole into memory.
struct UploadBody: Sendable {
    let fd: Int32
    let size: Int64

    struct Failure: Error {
        var code: Int
        var message: String
    }

    static func open(_ path: String, container: String) -> Result<UploadBody, Failure> {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let fd = Glibc.open(resolved, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return Result.failure(Failure(code: WireTransfer.ErrorCode.fileDoesNotExist, message: "cannot open \(path): \(errnoText(errno))")) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            return .failure(Failure(code: WireTransfer.ErrorCode.fileDoesNotExist, message: "\(path) is not a regular file"))
        }
        let opened = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
        let root = URL(fileURLWithPath: container).resolvingSymlinksInPath().path + "/"
        guard opened.hasPrefix(root) else {
            Glibc.close(fd)
            return .failure(Failure(
                code: WireTransfer.ErrorCode.noPermissionsToReadFile,
                message: "\(path) is outside the app's container (\(container)); upload a file from the container"))
        }
        return .success(UploadBody(fd: fd, size: Int64(info.st_size)))
    }

    func close() { Glibc.close(fd) }

    /// Copies the body to `destination` (made anew) and closes it; the failure, if any, in words.
    func copy(to destination: URL) -> String? {
        defer { close() }
        let out = Glibc.open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { return "cannot keep the upload's body: \(errnoText(errno))" }
        defer { Glibc.close(out) }
        var copied: Int64 = 0
        while copied < size {
            let count = apphost_copy_file_range(fd, out, Int(min(size - copied, 1 << 30)))
            if count > 0 {
                copied += Int64(count)
            } else if count == 0 {
                return "the upload's body shrank while it was copied (\(copied) of \(size) bytes)"
            } else if errno == EINTR {
                continue
            } else if [EXDEV, ENOSYS, EINVAL, EOPNOTSUPP].contains(errno) {
                return copyByReading(to: out, from: copied)
            } else {
                return "cannot copy the upload's body: \(errnoText(errno))"
            }
        }
        return nil
    }

    /// Where the kernel cannot copy between the two files: a megabyte at a time.
    private func copyByReading(to out: Int32, from start: Int64) -> String? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var copied = start
        while copied < size {
            let count = pread(fd, &buffer, min(buffer.count, Int(size - copied)), off_t(copied))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? "the upload's body shrank while it was copied" : "cannot read the upload's body: \(errnoText(errno))" }
            var written = 0
            while written < count {
                let result = pwrite(out, &buffer[written], count - written, off_t(copied) + off_t(written))
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { return "cannot keep the upload's body: \(errnoText(errno))" }
                written += result
            }
            copied += Int64(count)
        }
        return nil
    }
}
