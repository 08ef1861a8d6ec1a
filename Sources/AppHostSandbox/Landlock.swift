#if canImport(Glibc)
package import AppHostSystem
import Glibc
#endif
import CAppHostShims

/// Landlock, through its three syscalls: what the app may read and write on the file system.
/// Everything not granted here is refused with EACCES, whatever the file's permissions say.
package enum Landlock {
    /// The access rights of a path rule.
    package enum Access: Sendable, Equatable {
        /// Execute, read files, list directories.
        case readOnly
        /// Every right this kernel's Landlock knows, below the path.
        case readWrite
    }

    package struct Rule: Sendable, Equatable {
        package var path: String
        package var access: Access

        package init(_ path: String, _ access: Access) {
            self.path = path
            self.access = access
        }
    }

    /// The kernel's Landlock ABI version, 0 where Landlock is missing or disabled.
    package static var abiVersion: Int32 { max(0, apphost_landlock_abi_version()) }

    // LANDLOCK_ACCESS_FS_* bits.
    private static let execute: UInt64 = 1 << 0
    private static let writeFile: UInt64 = 1 << 1
    private static let readFile: UInt64 = 1 << 2
    private static let readDirectory: UInt64 = 1 << 3
    /// The rights that apply to a file (not a directory): execute, write, read, truncate, ioctl.
    private static let fileRights: UInt64 = execute | writeFile | readFile | (1 << 14) | (1 << 15)

    /// The file-system rights this ABI handles: 13 rights in ABI 1, REFER in 2, TRUNCATE in 3,
    /// IOCTL_DEV in 5.
    static func handledRights(abi: Int32) -> UInt64 {
        var rights: UInt64 = (1 << 13) - 1
        if abi >= 2 { rights |= 1 << 13 }
        if abi >= 3 { rights |= 1 << 14 }
        if abi >= 5 { rights |= 1 << 15 }
        return rights
    }

    /// A ruleset being filled, not yet enforced: its descriptor (close-on-exec), which no app
    /// code ever sees (`restrict` closes it).
    package struct Ruleset: Sendable, Equatable {
        package let descriptor: Int32
        /// The rights it handles, all that this kernel's ABI knows (`handledRights`).
        fileprivate let handled: UInt64
        /// The rules it holds, with the inode each names: a path that names another since (a
        /// file rewritten and renamed over it, as `useradd` does /etc/passwd; a directory
        /// replaced or mounted over) gets a rule for that one too from `restrict`.
        fileprivate var added: [Added] = []
        /// Rules skipped because their path was missing or out of reach when added, which
        /// `restrict` tries again.
        fileprivate var skipped: [Rule] = []
    }

    fileprivate struct Added: Sendable, Equatable {
        var rule: Rule
        var device: UInt64
        var inode: UInt64
    }

    /// Makes a ruleset holding `rules`, which confines nothing until `restrict` enforces it. A
    /// standby app process adds the rules that are the same in every app's mount namespace
    /// before its launch (`sharedRules`): a rule names a file by its inode, not its path, and
    /// the namespace is a copy of the host's mounts. Paths that do not exist, or that this
    /// process cannot reach, are skipped.
    ///
    /// Returns nil where the kernel has no Landlock.
    package static func prepare(_ rules: [Rule]) throws(SystemError) -> Ruleset? {
        let abi = abiVersion
        guard abi > 0 else { return nil }
        let handled = handledRights(abi: abi)
        var attributes = apphost_landlock_ruleset_attr(handled_access_fs: handled, handled_access_net: 0, scoped: 0)
        let size: Int
        if abi >= 6 {
            attributes.scoped = 1 /* ABSTRACT_UNIX_SOCKET */ | 2 /* SIGNAL */
            size = 24
        } else {
            size = 8
        }
        let descriptor = try valueOrErrno("landlock_create_ruleset") { apphost_landlock_create_ruleset(&attributes, size) }
        var ruleset = Ruleset(descriptor: descriptor, handled: handled)
        do {
            try add(rules, to: &ruleset)
        } catch {
            close(ruleset.descriptor)
            throw error
        }
        return ruleset
    }

    /// Confines this process (and its future threads and children) to `rules`, and to those of
    /// `prepared` if given (which it closes). Paths that do not exist, or that the app's user
    /// cannot reach, are skipped. From ABI 6 the app also cannot signal, or reach by abstract
    /// Unix socket, any process outside its own domain: the host and other apps included.
    ///
    /// Returns false, doing nothing, where the kernel has no Landlock. NO_NEW_PRIVS must be set.
    package static func restrict(to rules: [Rule], adding prepared: Ruleset? = nil) throws(SystemError) -> Bool {
        var made = prepared
        if made == nil { made = try prepare([]) }
        guard var ruleset = made else { return false }
        defer { close(ruleset.descriptor) }
        let replaced = ruleset.added.filter { added in
            var info = stat()
            return stat(added.rule.path, &info) == 0 && (UInt64(info.st_dev) != added.device || UInt64(info.st_ino) != added.inode)
        }
        try add(replaced.map(\.rule) + ruleset.skipped + rules, to: &ruleset)
        try valueOrErrno("landlock_restrict_self") { apphost_landlock_restrict_self(ruleset.descriptor) }
        return true
    }

    private static func add(_ rules: [Rule], to ruleset: inout Ruleset) throws(SystemError) {
        let handled = ruleset.handled
        for rule in rules {
            let fd: Int32
            do {
                fd = try valueOrErrno("open(\(rule.path))") { open(rule.path, 0o10000000 /* O_PATH, GNU-only */ | O_CLOEXEC) }
            } catch where error.errno == ENOENT || error.errno == EACCES {
                ruleset.skipped.append(rule)
                continue  // missing, or out of the app user's reach anyway: no rule needed
            }
            defer { close(fd) }
            var info = stat()
            try valueOrErrno("fstat(\(rule.path))") { fstat(fd, &info) }
            var allowed = rule.access == .readOnly ? execute | readFile | readDirectory : handled
            if info.st_mode & S_IFMT != S_IFDIR { allowed &= fileRights }
            ruleset.added.append(Added(rule: rule, device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
            try valueOrErrno("landlock_add_rule(\(rule.path))") { apphost_landlock_allow_beneath(ruleset.descriptor, allowed & handled, fd) }
        }
    }

    /// The system paths every app may read: libraries, configuration it needs from /etc,
    /// `processes` (its own /proc entry, or a /proc of its own PID namespace) and the CPU
    /// topology Dispatch reads; device nodes it may read or write. Not /sys/fs/cgroup: the
    /// runner is given its own groups (another app's would name it and show its figures). `libraries` are the
    /// directories of the shared objects the host has loaded (the Swift toolchain's among
    /// them), from `libraryDirectories()`. Without `sharedRules` where a ruleset holds them already.
    package static func systemRules(processes: String, libraries: [String], shared: Bool = true) -> [Rule] {
        (shared ? sharedRules : []) + processRules(processes) + libraries.map { Rule($0, .readOnly) }
    }

    /// The system rules whose files are the same in every app's mount namespace, made ahead by
    /// a standby: everything but /proc (a PID namespace's /proc is a file system of its own).
    package static let sharedRules: [Rule] = {
        var rules = ["/usr", "/lib", "/lib64", "/bin", "/sbin"].map { Rule($0, .readOnly) }
        rules += [
            "ld.so.cache", "localtime", "timezone", "passwd", "group", "nsswitch.conf", "hosts", "host.conf",
            "resolv.conf", "gai.conf", "services", "protocols", "ssl", "ca-certificates", "os-release", "mime.types",
        ].map { Rule("/etc/" + $0, .readOnly) }
        rules.append(Rule("/sys/devices/system/cpu", .readOnly))
        rules += ["/dev/zero", "/dev/urandom", "/dev/random"].map { Rule($0, .readOnly) }
        rules.append(Rule("/dev/null", .readWrite))
        return rules
    }()

    /// The system rules in /proc: `processes`, and what of the system's figures an app reads.
    private static func processRules(_ processes: String) -> [Rule] {
        [processes, "/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/filesystems"].map { Rule($0, .readOnly) }
    }

    /// The directories of every shared object this process has mapped, outside the system
    /// directories above. Read once by the supervisor, which runs the same binary as the apps.
    package static func libraryDirectories() -> [String] {
        var directories: Set<String> = []
        let maps = readSmallFile("/proc/self/maps")
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/"), let end = line[slash...].lastIndex(of: "/") else { continue }
            let directory = String(line[slash..<end])
            if !["/usr", "/lib", "/lib64"].contains(where: { directory == $0 || directory.hasPrefix($0 + "/") }) {
                directories.insert(directory)
            }
        }
        return directories.sorted()
    }
}
