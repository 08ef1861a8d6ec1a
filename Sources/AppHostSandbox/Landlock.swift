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

    /// A ruleset being filled, not yet enforced: its descriptor (close-on-exec), which no app
    /// code ever sees (`restrict` closes it).
    package struct Ruleset: Sendable, Equatable {
        package let descriptor: Int32
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
        guard abiVersion > 0 else { return nil }
        let descriptor = try valueOrErrno("landlock_create_ruleset") { apphost_landlock_create() }
        var ruleset = Ruleset(descriptor: descriptor)
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
        for rule in rules {
            var device: UInt64 = 0
            var inode: UInt64 = 0
            switch apphost_landlock_add(ruleset.descriptor, rule.path, rule.access == .readWrite ? 1 : 0, &device, &inode) {
            case 0: ruleset.added.append(Added(rule: rule, device: device, inode: inode))
            // Missing, or out of the app user's reach anyway: no rule needed.
            case 1: ruleset.skipped.append(rule)
            default: throw SystemError("Landlock rule for \(rule.path)", errno: errno)
            }
        }
    }

    /// An app's rules but `sharedRules` (the system paths every app may read, its device nodes):
    /// `processes` (its own /proc entry, or a /proc of its own PID namespace) and the figures of
    /// the system an app reads there; the `readable` directories (those of the shared objects
    /// the host has loaded, the Swift toolchain's among them, from `libraryDirectories()`, and
    /// the app's own cgroups: not /sys/fs/cgroup, where another app's would name it and show its
    /// figures); its bundle and plugin (which may be a link out of the bundle, in a development
    /// bundle: a rule names what its path resolves to); its containers, `writable`.
    package static func appRules(processes: String, readable: [String], bundle: String, plugin: String, writable: [String]) -> [Rule] {
        processRules(processes) + readable.map { Rule($0, .readOnly) } + [Rule(bundle, .readOnly), Rule(plugin, .readOnly)]
            + writable.map { Rule($0, .readWrite) }
    }

    /// The options that ask an app's namespace init (apphost-init) for `rules`: it adds them to
    /// the app's ruleset once it has isolated the file system, and passes the ruleset to the app
    /// process with its report (`Namespaces.awaitIsolatedFileSystem`).
    package static func initOptions(_ rules: [Rule]) -> [String] {
        rules.flatMap { [$0.access == .readOnly ? "--landlock-read" : "--landlock-write", $0.path] }
    }

    /// Enforces on this thread, and the threads it starts, a ruleset made elsewhere (by the
    /// namespace's init), and closes it. Returns the Landlock ABI, 0 without a ruleset.
    package static func enforce(_ ruleset: Int32?) throws(SystemError) -> Int32 {
        guard let ruleset else { return 0 }
        defer { close(ruleset) }
        try valueOrErrno("landlock_restrict_self") { apphost_landlock_restrict_self(ruleset) }
        return abiVersion
    }

    /// The system rules whose files are the same in every app's mount namespace, made ahead by
    /// a standby (its init, in namespaces): everything but /proc (a PID namespace's /proc is a
    /// file system of its own).
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
            // A mapping named with one slash (/memfd:…, /SYSV…) is no file's directory.
            if !directory.isEmpty, !["/usr", "/lib", "/lib64"].contains(where: { directory == $0 || directory.hasPrefix($0 + "/") }) {
                directories.insert(directory)
            }
        }
        return directories.sorted()
    }
}
