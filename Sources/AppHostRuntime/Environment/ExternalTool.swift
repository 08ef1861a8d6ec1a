#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

/// The e2fsprogs tools the disk-image storage runs (mkfs.ext4, e2fsck, resize2fs): found in the
/// system's sbin and bin directories, run to completion with posix_spawn and a clean environment,
/// with no descriptor of the host's but a pipe for what they print.
enum ExternalTool {
    static let directories = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]

    /// The tool's path, nil if it is not installed.
    static func find(_ name: String) -> String? {
        directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// What a run gave: its exit status (nil if killed by a signal) and its output, both streams.
    struct Outcome {
        var status: Int32?
        var output: String

        /// The output's last non-empty line: what a tool says when it refuses.
        var lastLine: String {
            output.split(separator: "\n").last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map(String.init) ?? "no output"
        }
    }

    /// Runs `name arguments…` and waits for it. Throws if it cannot be started.
    static func run(_ name: String, _ arguments: [String]) throws(SystemError) -> Outcome {
        guard let path = find(name) else { throw SystemError("find \(name)", errno: ENOENT) }
        var pipeFDs: [Int32] = [-1, -1]
        try valueOrErrno("pipe2") { apphost_pipe_cloexec(&pipeFDs) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2)
        _ = apphost_spawn_close_from(&actions, 3)
        let pid: pid_t
        do {
            pid = try spawnWithCleanSignals(path, arguments, environment: ["PATH=/usr/sbin:/sbin:/usr/bin:/bin", "LC_ALL=C"], fileActions: &actions)
        } catch {
            closeIgnoringErrors(pipeFDs[1])
            closeIgnoringErrors(pipeFDs[0])
            throw error
        }
        closeIgnoringErrors(pipeFDs[1])
        defer { closeIgnoringErrors(pipeFDs[0]) }

        // Read to the end before waiting: a tool that fills the pipe would never end otherwise.
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case .bytes(let count) = readSome(pipeFDs[0], into: &buffer) {
            if output.count < 1 << 20 { output += buffer[0..<count] }
        }
        var status: Int32 = 0
        _ = try? valueOrErrno("waitpid \(pid)") { waitpid(pid, &status, 0) }
        let exited = status & 0x7f == 0
        return Outcome(status: exited ? (status >> 8) & 0xff : nil, output: String(decoding: output, as: UTF8.self))
    }

    /// Runs the tool and throws, with its last line, unless it exits with one of `success`.
    @discardableResult
    static func check(_ name: String, _ arguments: [String], success: Set<Int32> = [0]) throws(StorageError) -> Outcome {
        let outcome: Outcome
        do { outcome = try run(name, arguments) } catch { throw StorageError("\(name): \(error)") }
        guard let status = outcome.status, success.contains(status) else {
            throw StorageError("\(name) \(outcome.status.map { "exited with status \($0)" } ?? "was killed"): \(outcome.lastLine)")
        }
        return outcome
    }
}

/// Why a container's storage could not be set up as asked: one line for a `warning` event.
struct StorageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
    init(_ error: SystemError) { description = error.description }
}
