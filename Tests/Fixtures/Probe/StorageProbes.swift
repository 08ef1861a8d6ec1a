import AppHostKit
import Foundation

// What the Probe does with its storage, from ProbeBehavior "storage", in the callback named by
// its "in" (default didFinishLaunching):
//   "fallocateMiB": N   posix_fallocate N MiB as Documents/fallocated (then removes it)
//   "writeMiB": N       writes up to N MiB to Documents/written, 1 MiB at a time, stopping at
//                       the first error; on an error it gives back its last MiB so that it can
//                       still record what happened
//   "cacheMiB": N       writes N MiB to Library/Caches/cache.bin and to tmp/scratch.bin
//   "documentMiB": N    writes N MiB to Documents/keep.bin
//   "groupWriteMiB": N  like writeMiB, into the container of the app group ProbeBehavior "group"
// Each records one line in lifecycle.log: "storage fallocate 4096 MiB: ENOSPC",
// "storage write: ENOSPC after 52 MiB", "storage cache: ok".
extension AppDelegate {
    func storageProbes(in callback: String) {
        guard let storage = behavior["storage"] as? [String: Any], callback == storage["in"] as? String ?? "didFinishLaunching" else { return }
        let container = Application.shared.containerURL.path
        if let mebibytes = storage["fallocateMiB"] as? Int {
            let path = container + "/Documents/fallocated"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            let result = fd < 0 ? errno : posix_fallocate(fd, 0, off_t(mebibytes) << 20)
            if fd >= 0 { close(fd) }
            unlink(path)
            record("storage fallocate \(mebibytes) MiB: \(name(of: result))")
        }
        if let mebibytes = storage["writeMiB"] as? Int {
            let (outcome, written) = fill(container + "/Documents/written", mebibytes: mebibytes)
            record("storage write: \(name(of: outcome)) after \(written) MiB")
        }
        if let mebibytes = storage["groupWriteMiB"] as? Int {
            let group = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: behavior["group"] as? String ?? "")
            let (outcome, written) = group.map { fill($0.path + "/written", mebibytes: mebibytes) } ?? (ENOENT, 0)
            record("storage group write: \(name(of: outcome)) after \(written) MiB")
        }
        for (key, files) in [("cacheMiB", ["Library/Caches/cache.bin", "tmp/scratch.bin"]), ("documentMiB", ["Documents/keep.bin"])] {
            guard let mebibytes = storage[key] as? Int else { continue }
            let outcomes = files.map { fill(container + "/" + $0, mebibytes: mebibytes).error }
            record("storage \(key == "cacheMiB" ? "cache" : "document"): \(outcomes.map(name(of:)).joined(separator: ", "))")
        }
    }

    /// Writes up to `mebibytes` MiB of non-zero bytes (no holes); the errno that stopped it (0:
    /// none) and the MiB written. After an error the last MiB is given back.
    private func fill(_ path: String, mebibytes: Int) -> (error: Int32, written: Int) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return (errno, 0) }
        defer { close(fd) }
        let block = [UInt8](repeating: 0xA5, count: 1 << 20)
        var written = 0
        var failure: Int32 = 0
        while written < mebibytes {
            let count = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                failure = errno
                break
            }
            if count < block.count {
                // A short write: the file system is full; the next one says why.
                continue
            }
            written += 1
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if failure != 0 {
            ftruncate(fd, off_t(max(0, written - 1)) << 20)
            fsync(fd)
        }
        return (failure, written)
    }

    private func name(of error: Int32) -> String {
        let names: [Int32: String] = [0: "ok", ENOSPC: "ENOSPC", EDQUOT: "EDQUOT", EACCES: "EACCES", ENOENT: "ENOENT", EPERM: "EPERM", EFBIG: "EFBIG"]
        return names[error] ?? "errno \(error)"
    }
}
