#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// The launch template (docs/launching.md, "How apps are launched"): apphost's binary started once per
/// host as `apphost __template`, with a socket to the host on descriptor 3. Starting it loaded
/// the Swift runtime, Foundation and Dispatch, the most of an app process's start-up; it then
/// waits for requests and forks one app process per request, which runs AppProcessRunner as an
/// exec'd one would. It stays single-threaded (a fork copies only the calling thread), uses no
/// Dispatch queue, never loads a plugin and never runs app code: each fork takes the app's
/// identity and loads its plugin only after it has left. Android's zygote works this way.
public enum LaunchTemplate {
    public static let argument = launchTemplateArgument
    static let channelFD: Int32 = 3

    public static func main() -> Never {
        _ = apphost_set_parent_death_signal(SIGKILL)
        guard threadCount == 1 else { refuseToStart("it has \(threadCount) threads at start, and forks only from one") }
        if let expected = ProcessInfo.processInfo.environment[AppProcessRunner.parentPIDVariable].flatMap(Int32.init),
           getppid() != expected {
            _exit(0)
        }
        _ = apphost_set_thread_name("apphost-template")
        let placeholders = launchTemplatePlaceholders.map { strdup($0) }
        let prepared = placeholders.withUnsafeBufferPointer { names in
            names.withMemoryRebound(to: UnsafePointer<CChar>?.self) { apphost_template_prepare($0.baseAddress, Int32($0.count)) }
        }
        guard prepared == 0 else { refuseToStart("cannot find glibc's record of its thread's id") }
        loadTheSDK()
        warmUp()
        // Last: the pages touched so far are the ones each fork would otherwise fault in again.
        guard apphost_template_share_page_tables() != -2 else { refuseToStart("a library's code stayed writable") }
        var buffer = [UInt8](repeating: 0, count: LaunchTemplateRequest.maximumSize)
        var descriptors = [Int32](repeating: -1, count: LaunchTemplateRequest.maximumDescriptors + 1)
        while true {
            var count: Int32 = 0
            let received = buffer.withUnsafeMutableBytes { bytes in
                descriptors.withUnsafeMutableBufferPointer {
                    apphost_template_receive(channelFD, bytes.baseAddress, bytes.count, $0.baseAddress, Int32($0.count), &count)
                }
            }
            // The host has gone (or closed the socket): so does the template.
            if received == 0 || (received < 0 && errno != EMSGSIZE) { _exit(0) }
            let passed = Array(descriptors.prefix(Int(count)))
            let reply: (reply: LaunchTemplateReply, pidfd: Int32) = received < 0
                ? (LaunchTemplateReply(errno: EMSGSIZE, failure: "a request longer than \(LaunchTemplateRequest.maximumSize) bytes or with too many descriptors"), -1)
                : buffer.withUnsafeBytes { start(UnsafeRawBufferPointer(rebasing: $0.prefix(received)), descriptors: passed) }
            // Nothing of this launch reaches the next fork: its request is zeroed where it was read.
            buffer.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
            passed.forEach { _ = close($0) }
            let body = reply.reply.compactBytes
            var pidfd = reply.pidfd
            let sent = body.withUnsafeBytes { apphost_send_with_fds(channelFD, $0.baseAddress, $0.count, &pidfd, pidfd >= 0 ? 1 : 0) }
            if reply.pidfd >= 0 { close(reply.pidfd) }
            if sent < 0 { _exit(0) }
        }
    }

    /// Starts the process a request asks for; returns the answer and the pidfd to pass with it.
    static func start(_ body: UnsafeRawBufferPointer, descriptors: [Int32]) -> (reply: LaunchTemplateReply, pidfd: Int32) {
        guard let request = HeldRequest(body) else {
            return (LaunchTemplateReply(errno: EINVAL, failure: "unreadable request"), -1)
        }
        defer { request.scrub() }
        // Nothing may have started a thread since: the fork would copy its locks held.
        guard threadCount == 1 else {
            return (LaunchTemplateReply(errno: EDEADLK, failure: "the template has \(threadCount) threads"), -1)
        }
        // A value longer than its placeholder could not reach CoreFoundation: the host execs.
        for entry in request.environment {
            guard let entry, let name = placeholders.first(where: { strncmp(entry, $0.name, $0.length) == 0 && entry[$0.length] == 0x3d }) else { continue }
            if strlen(entry) - name.length - 1 > Int(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) {
                return (LaunchTemplateReply(errno: ENAMETOOLONG, failure: "\(name.text) is longer than the template's \(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) bytes"), -1)
            }
        }
        var appDescriptors = descriptors
        var cgroup: Int32 = -1
        if request.intoCgroup, let last = appDescriptors.popLast() { cgroup = last }
        let environment = request.environment + [nil]
        let initArguments = request.initArguments + [nil]
        // A fork copies what stdio holds unwritten, and would write it again.
        fflush(nil)
        var pidfd: Int32 = -1
        var inCgroup: Int32 = 0
        let pid = apphost_template_spawn(
            environment, appDescriptors, Int32(appDescriptors.count), request.namespaces,
            request.initArguments.isEmpty ? nil : initArguments[0], initArguments, cgroup, request.requireCgroup ? 1 : 0, runAppProcess,
            &pidfd, &inCgroup)
        guard pid > 0 else {
            // A pidfd comes with the failure if a process was started: the host reaps it.
            return (LaunchTemplateReply(errno: errno, failure: "fork of the template: \(errnoText(errno))"), pidfd)
        }
        return (LaunchTemplateReply(pid: pid, startedInCgroup: inCgroup != 0), pidfd)
    }

    /// The placeholders' names as C strings, made once.
    static let placeholders: [(name: [CChar], length: Int, text: String)] = launchTemplatePlaceholders.map {
        (Array($0.utf8CString), $0.utf8.count, $0)
    }

    /// The template's threads (the 20th field of /proc/self/stat, after the name's parenthesis).
    static var threadCount: Int {
        let stat = readSmallFile("/proc/self/stat")
        guard let close = stat.lastIndex(of: ")") else { return 1 }
        return stat[stat.index(after: close)...].split(separator: " ").dropFirst(17).first.flatMap { Int($0) } ?? 1
    }

    /// Says why on standard error (the host's) and ends; the host then launches by exec.
    static func refuseToStart(_ reason: String) -> Never {
        let line = "apphost: the launch template does not start: \(reason)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        _exit(70)
    }

    /// What each fork becomes, once its descriptors and environment are the app's.
    static let runAppProcess: @convention(c) () -> Void = {
        AppProcessRunner.main()
    }

    /// Loads the SDK beside the template's binary, if `bundle-app` has linked one there, so that
    /// each fork starts with it loaded and bound: a plugin that `bundle-app` linked against the
    /// same SDK names it by its `soname` (`libAppHostKit-HASH.so`), which the loader finds loaded
    /// (about 0.5 ms of a launch, README.md). It is loaded `RTLD_LOCAL`: a plugin linked against
    /// another SDK loads the copy in its bundle, and one that carries the SDK in itself binds to
    /// its own. The SDK is apphost's code, linked by `bundle-app` from the objects of the build
    /// beside it: no app code runs here.
    static func loadTheSDK() {
        // (After a rebuild the link reads "… (deleted)": the directory is still the binary's.)
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return }
        let path = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(launchTemplateSDKFileName).path
        var binary = stat(), sdk = stat()
        guard stat(path, &sdk) == 0 else { return }
        // The template runs unconfined: only a library as trusted as its own binary (its owner's,
        // a regular file no one else may write).
        guard stat("/proc/self/exe", &binary) == 0, sdk.st_mode & S_IFMT == S_IFREG, sdk.st_uid == binary.st_uid,
              sdk.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            let line = "apphost: the launch template does not load \(path): it is not a regular file of the binary's owner that only its owner may write\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            return
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let line = "apphost: the launch template does not load \(path): \(dlerror().map { String(cString: $0) } ?? "unknown error")\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            return
        }
        // What each app process's SDK would otherwise do first (PluginEntry.swift).
        if let warmUp = dlsym(handle, "apphost_sdk_warm_up") {
            unsafeBitCast(warmUp, to: (@convention(c) () -> Void).self)()
        }
    }

    /// What every app process would otherwise do first, done once here so that each fork
    /// inherits it done: the coders' and the wire types' metadata, the environment's reading.
    static func warmUp() {
        if case .configure(let configuration)? = try? WireCoding.decode(HostMessage.self, from: WireCoding.encode(HostMessage.configure(.everyPart))) {
            _ = AppProcessRunner.plan(for: configuration)
        }
        _ = try? WireCoding.decode(AppMessage.self, from: WireCoding.encode(AppMessage.hello(protocolVersion: wireProtocolVersion, pid: 0)))
        _ = try? LaunchTemplateRequest(compact: LaunchTemplateRequest(namespaces: 0, initArguments: [], environment: [], intoCgroup: false).compactBytes[...])
        _ = try? LaunchTemplateReply(compact: LaunchTemplateReply(pid: 0, startedInCgroup: true).compactBytes[...])
        _ = ProcessInfo.processInfo.environment
        AppProcessRunner.askNSCDOutsideTheSandbox()
        warmUpPrinting()
    }

    /// Prints and describes the standard library's own values once, as every app process that
    /// prints does: the generic types' metadata this makes ([Any], [String: Any], …) is there
    /// before any fork. The conformance answers it finds are not kept for the apps: the Swift
    /// runtime empties its conformance cache whenever an image registers, the app's plugin
    /// included, so an app's first print after its load still scans every loaded image's
    /// conformance records (about 6,300: 60–190 µs a look-up, measured).
    static func warmUpPrinting() {
        var sink = ""
        let values: [Any] = [
            "", Substring(""), Character(" "), 0, 0 as Int32, 0 as Int64, 0 as UInt, 0 as UInt8, 0.0, Float(0), true,
            Int?.none as Any, String?.none as Any, [""], [0], ["": ""], ["": 0], ["": 0.0], Set([""]),
            [String: Any](), [Any](), Date(timeIntervalSince1970: 0), URL(fileURLWithPath: "/"), UUID(uuidString: "00000000-0000-0000-0000-000000000000")!,
            Data(), NSNumber(value: 0), ObjectIdentifier(LaunchTemplate.self) as Any, Duration.zero, (0, ""),
        ]
        print(values, to: &sink)
        debugPrint(values, to: &sink)
        for value in values {
            print(value, value, separator: " ", to: &sink)
            debugPrint(value, to: &sink)
            sink += "\(value)" + String(describing: value) + String(reflecting: value)
        }
    }
}

/// A launch request as the template holds it (docs/launching.md, "How apps are launched"): read in
/// place from the receive buffer into C strings of its own, never into Swift strings (whose
/// freed storage would stay in the template's heap, and so in every later fork), then zeroed and
/// freed once the fork is made. With the buffer zeroed too, nothing of one app's launch (its
/// container paths, environment, Landlock arguments) reaches another app's process.
struct HeldRequest {
    var namespaces: Int32 = 0
    var initArguments: [UnsafeMutablePointer<CChar>?] = []
    var environment: [UnsafeMutablePointer<CChar>?] = []
    var intoCgroup = false
    var requireCgroup = false

    /// The compact layout of LaunchTemplateRequest: little-endian UInt32s, strings as a length
    /// and their bytes, booleans as one byte.
    init?(_ bytes: UnsafeRawBufferPointer) {
        var cursor = Cursor(bytes: bytes)
        guard let namespaces = cursor.uint32() else { return nil }
        self.namespaces = Int32(bitPattern: namespaces)
        guard let initArguments = cursor.strings() else { return nil }
        self.initArguments = initArguments
        guard let environment = cursor.strings() else {
            Self.scrub(initArguments)
            return nil
        }
        self.environment = environment
        guard let intoCgroup = cursor.flag(), let requireCgroup = cursor.flag(), cursor.offset == bytes.count else {
            scrub()
            return nil
        }
        self.intoCgroup = intoCgroup
        self.requireCgroup = requireCgroup
    }

    func scrub() {
        Self.scrub(initArguments)
        Self.scrub(environment)
    }

    private static func scrub(_ strings: [UnsafeMutablePointer<CChar>?]) {
        for case let string? in strings {
            explicit_bzero(string, strlen(string))
            free(string)
        }
    }

    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }

        mutating func uint32() -> UInt32? {
            take(4).map { $0.reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        }

        mutating func flag() -> Bool? {
            switch take(1)?.first {
            case 0: false
            case 1: true
            default: nil
            }
        }

        /// A count, then each string: each copied into memory of its own, NUL-terminated.
        mutating func strings() -> [UnsafeMutablePointer<CChar>?]? {
            guard let count = uint32(), Int(count) <= bytes.count - offset else { return nil }
            var strings: [UnsafeMutablePointer<CChar>?] = []
            strings.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let length = uint32(), let text = take(Int(length)), let copy = malloc(Int(length) + 1)?.assumingMemoryBound(to: CChar.self) else {
                    HeldRequest.scrub(strings)
                    return nil
                }
                if length > 0 { memcpy(copy, text.baseAddress!, Int(length)) }
                copy[Int(length)] = 0
                strings.append(copy)
            }
            return strings
        }
    }
}
