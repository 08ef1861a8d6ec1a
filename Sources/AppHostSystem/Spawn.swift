#if canImport(Glibc)
package import Glibc
#endif

/// `posix_spawn` of `path` with every signal back to its default and none blocked — what the
/// spawner ignores, handles or blocks is not the child's business — and, with `ownProcessGroup`,
/// in a process group of its own. The descriptors are the caller's `fileActions`. Returns the
/// child's pid.
package func spawnWithCleanSignals(
    _ path: String, _ arguments: [String], environment: [String], fileActions: inout posix_spawn_file_actions_t,
    ownProcessGroup: Bool = false
) throws(SystemError) -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigfillset(&defaults)
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
    if ownProcessGroup {
        posix_spawnattr_setpgroup(&attributes, 0)
        flags |= POSIX_SPAWN_SETPGROUP
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &fileActions, &attributes, argv, envp)
    guard spawned == 0 else { throw SystemError("posix_spawn \(path)", errno: spawned) }
    return pid
}
