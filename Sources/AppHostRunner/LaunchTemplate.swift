#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostProtocol
import AppHostSystem
import CAppHostShims

/// The launch template (README.md, "How apps are launched"): apphost's binary started once per
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
                : start(buffer.prefix(received), descriptors: passed)
            passed.forEach { _ = close($0) }
            let body = reply.reply.compactBytes
            var pidfd = reply.pidfd
            let sent = body.withUnsafeBytes { apphost_send_with_fds(channelFD, $0.baseAddress, $0.count, &pidfd, pidfd >= 0 ? 1 : 0) }
            if reply.pidfd >= 0 { close(reply.pidfd) }
            if sent < 0 { _exit(0) }
        }
    }

    /// Starts the process a request asks for; returns the answer and the pidfd to pass with it.
    static func start(_ body: ArraySlice<UInt8>, descriptors: [Int32]) -> (reply: LaunchTemplateReply, pidfd: Int32) {
        guard let request = try? LaunchTemplateRequest(compact: body) else {
            return (LaunchTemplateReply(errno: EINVAL, failure: "unreadable request"), -1)
        }
        // Nothing may have started a thread since: the fork would copy its locks held.
        guard threadCount == 1 else {
            return (LaunchTemplateReply(errno: EDEADLK, failure: "the template has \(threadCount) threads"), -1)
        }
        // A value longer than its placeholder could not reach CoreFoundation: the host execs.
        for entry in request.environment {
            guard let equals = entry.firstIndex(of: "="), launchTemplatePlaceholders.contains(String(entry[..<equals])) else { continue }
            if entry.utf8.count - entry.utf8.distance(from: entry.startIndex, to: equals) - 1 > Int(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) {
                return (LaunchTemplateReply(errno: ENAMETOOLONG, failure: "\(entry[..<equals]) is longer than the template's \(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH) bytes"), -1)
            }
        }
        var appDescriptors = descriptors
        var cgroup: Int32 = -1
        if request.intoCgroup, let last = appDescriptors.popLast() { cgroup = last }
        let environment = request.environment.map { strdup($0) } + [nil]
        let initArguments = request.initArguments.map { strdup($0) } + [nil]
        defer { (environment + initArguments).forEach { free($0) } }
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
