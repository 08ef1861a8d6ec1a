// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import AppHostSystem
import CAppHostShims
import Foundation
import Testing

/// Where the built binary and the bundled apps are. `scripts/test` builds both before `swift test`.
enum Paths {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binaries: URL {
        if let explicit = ProcessInfo.processInfo.environment["APPHOST_BIN_DIR"] { return URL(fileURLWithPath: explicit) }
        return packageRoot.appendingPathComponent(".build/debug")
    }

    static var apphost: URL { binaries.appendingPathComponent("apphost") }

    /// The bundled apps. On a root host apps run under their own users, which must be able to
    /// read the bundles: a checkout under a private directory (such as /root) is copied once to
    /// a readable place.
    static let apps: URL = reachable(packageRoot.appendingPathComponent(".build/apps"))

    /// A fixture library from the build directory, readable by app users.
    static func library(_ name: String) -> URL {
        let built = binaries.appendingPathComponent(name)
        guard getuid() == 0, !readableByOthers(built) else { return built }
        let copy = reachable(built.deletingLastPathComponent(), only: name)
        return copy.appendingPathComponent(name)
    }

    private static func readableByOthers(_ url: URL) -> Bool {
        var path = ""
        for component in url.standardizedFileURL.pathComponents.dropLast() {
            path = component == "/" ? "/" : (path == "/" ? "/" + component : path + "/" + component)
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IXOTH == 0 { return false }
        }
        return true
    }

    private static func reachable(_ directory: URL, only file: String? = nil) -> URL {
        guard getuid() == 0, !readableByOthers(directory.appendingPathComponent("x")) else { return directory }
        let copy = URL(fileURLWithPath: "/tmp/apphost-test-builds-\(getpid())").appendingPathComponent(directory.lastPathComponent)
        try? FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        let names = file.map { [$0] } ?? ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        for name in names where !FileManager.default.fileExists(atPath: copy.appendingPathComponent(name).path) {
            try? FileManager.default.copyItem(at: directory.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        return copy
    }

    /// Fails the test with a message naming the missing step, rather than a confusing error later.
    static func requireBuilt(_ url: URL) throws {
        try #require(
            FileManager.default.fileExists(atPath: url.path),
            "\(url.path) is missing: run scripts/test, which builds apphost and bundles the apps before swift test")
    }
}

/// A scratch directory for one test, removed when the test ends.
final class Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        unmountEverything(under: url.path)
        try? FileManager.default.removeItem(at: url)
    }

    var stateDirectory: URL { url.appendingPathComponent("state") }

    /// A copy of a bundled app (by default the Probe fixture) under a new name and identifier,
    /// with `behavior` as its ProbeBehavior and `changes` applied to its Info.plist.
    func bundle(
        _ name: String, from base: String = "Probe", behavior: [String: Any] = [:],
        changes: [String: Any?] = [:]
    ) throws -> URL {
        let source = Paths.apps.appendingPathComponent("\(base).app")
        try Paths.requireBuilt(source)
        let bundle = url.appendingPathComponent("\(name).app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: source.path) where file != "Info.plist" {
            // A bundle made again (new behaviour, same app) replaces the old one.
            try? FileManager.default.removeItem(at: bundle.appendingPathComponent(file))
            let original = source.appendingPathComponent(file), copy = bundle.appendingPathComponent(file)
            // The plugin may be a link (the app may read the file it names); the SDK beside it
            // must be the bundle's own, a hard link or a copy (docs/launching.md, "How apps are launched").
            if file.hasPrefix("libAppHostKit-") {
                if (try? FileManager.default.linkItem(at: original, to: copy)) == nil { try FileManager.default.copyItem(at: original, to: copy) }
            } else {
                try FileManager.default.createSymbolicLink(at: copy, withDestinationURL: original)
            }
        }
        let data = try Data(contentsOf: source.appendingPathComponent("Info.plist"))
        var info = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        info["CFBundleName"] = name
        info["CFBundleIdentifier"] = "test.\(name.lowercased())"
        info["ProbeBehavior"] = behavior
        for (key, value) in changes { info[key] = value }
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: bundle.appendingPathComponent("Info.plist"))
        return bundle
    }

    /// A bundle around one of the fixture shared objects in the build directory.
    func bundle(_ name: String, library: String, delegate: String = "X.AppDelegate") throws -> URL {
        let source = Paths.library(library)
        try Paths.requireBuilt(source)
        let bundle = url.appendingPathComponent("\(name).app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent(library), withDestinationURL: source)
        let info: [String: Any] = [
            "CFBundleIdentifier": "test.\(name.lowercased())", "CFBundleName": name,
            "CFBundleExecutable": library, "ApplicationDelegateClassName": delegate,
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: bundle.appendingPathComponent("Info.plist"))
        return bundle
    }

    /// What the Probe app with this name recorded, line by line.
    func recorded(_ name: String, settle: Bool = true) -> [String] {
        let text = containerFile("test.\(name.lowercased())", "Documents/lifecycle.log", settle: settle).map { String(decoding: $0, as: UTF8.self) }
        return (text ?? "").split(separator: "\n").map(String.init)
    }

    /// Waits until the Probe app with this name has recorded `line` (what it records on a message
    /// that no event follows, such as a location error); fails the test if it has not within
    /// `timeout` (a condition on the disk, checked every 10 ms).
    func waitForRecorded(_ name: String, _ line: String, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard !becomesTrue(within: timeout, { recorded(name, settle: false).contains(line) }) else { return }
        Issue.record("\(name) never recorded \(line.debugDescription); it recorded:\n\(recorded(name).joined(separator: "\n"))", sourceLocation: sourceLocation)
        throw WaitFailed()
    }

    /// A file of a container, while its host runs or after: once the host has unmounted the
    /// container's file system (a disk image, README.md "Storage limits"), it is read from
    /// the image with debugfs, without mounting it.
    /// `settle` false: while the image is in use (its host runs), nil at once.
    func containerFile(_ identifier: String, _ relative: String, settle: Bool = true) -> Data? {
        let plain = stateDirectory.appendingPathComponent("containers/\(identifier)/\(relative)")
        if let data = try? Data(contentsOf: plain) { return data }
        let image = stateDirectory.appendingPathComponent("storage/containers/\(identifier).ext4")
        guard FileManager.default.fileExists(atPath: image.path) else { return nil }
        // Its file system is written out once no mount of it is left anywhere (a mount
        // namespace made while it was mounted holds it until its last process ends): then its
        // loop device detaches itself.
        let real = image.resolvingSymlinksInPath().path
        if settle {
            if !becomesTrue(within: 10, { !isBackingALoopDevice(real) }) {
                Issue.record("\(real) still backs a loop device 10 s on: its last writes may not be in it yet (what still mounts it?)")
            }
        } else if isBackingALoopDevice(real) {
            // Mounted (its host runs, or has just mounted it since the look above): not read.
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/debugfs")
        process.arguments = ["-R", "cat /\(relative)", image.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? data : nil
    }

    /// The recorded callbacks with the state each saw, e.g. "didBecomeActive active".
    func callbacks(_ name: String) -> [String] {
        recorded(name).filter { $0.contains(" main=") && !$0.hasPrefix("expiration") }
            .map { $0.replacingOccurrences(of: " main=true", with: "") }
    }
}

/// One event line of `apphost launch --json`.
struct Event: CustomStringConvertible {
    let fields: [String: Any]

    var event: String { fields["event"] as? String ?? "" }
    var name: String? { fields["name"] as? String }
    var state: String? { fields["state"] as? String }
    var pid: Int32? { (fields["pid"] as? Int).map(Int32.init) }
    var code: String? { fields["code"] as? String }
    var kind: String? { fields["kind"] as? String }
    var namespace: String? { fields["namespace"] as? String }
    var reason: String? { fields["reason"] as? String }
    var detail: String? { fields["detail"] as? String }
    var report: String? { fields["report"] as? String }
    var time: Date? { (fields["time"] as? String).flatMap { Event.parser.date(from: $0) } }
    /// When the callback this event ends began: its time less the callback's duration. The host
    /// starts a callback's budgets (didEnterBackground's background time) when it sends it; its
    /// event comes when the app's acknowledgement is read, later on a loaded machine.
    var callbackStarted: Date { time!.addingTimeInterval(-((fields["elapsedMs"] as? Double) ?? 0) / 1000) }

    var description: String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    nonisolated(unsafe) static let parser: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}

/// A running `apphost launch --json` with its standard input open for commands. Released, it
/// quits the host (killing it if it does not end within 5 s) and waits for it: no host outlives
/// its test, and none writes into its scratch directory after the test removed it.
final class HostSession: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let transcript: Transcript
    private let exited = DispatchSemaphore(value: 0)
    /// Kept so that the scratch directory is removed only after the host has ended.
    private let scratch: Scratch
    /// Started with `--no-namespaces`: its apps run without, whatever the machine allows.
    private let withoutNamespaces: Bool

    /// `keepStandardErrorKiB`: keep only the last N KiB of the host's standard error, not all of it.
    /// `user`: run the host as this uid and gid (by setpriv, from a root test), not as root.
    /// `openFileLimit`: start the host with this RLIMIT_NOFILE, soft and hard (by prlimit).
    init(
        _ bundles: [URL], scratch: Scratch, arguments: [String] = [], environment: [String: String] = [:],
        keepStandardErrorKiB: Int? = nil, user: uid_t? = nil, openFileLimit: Int? = nil
    ) throws {
        try Paths.requireBuilt(Paths.apphost)
        self.scratch = scratch
        withoutNamespaces = arguments.contains("--no-namespaces")
        transcript = Transcript(standardErrorLimit: keepStandardErrorKiB.map { $0 * 1024 })
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let launch = ["launch", "--json", "--state-dir", scratch.stateDirectory.path] + arguments + bundles.map(\.path)
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", Paths.apphost.path] + launch
        } else if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(openFileLimit):\(openFileLimit)", "--", Paths.apphost.path] + launch
        } else {
            process.executableURL = Paths.apphost
            process.arguments = launch
        }
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // The readers hold the transcript, not the session, so that releasing the session ends
        // the host (whose exit ends the readers).
        Thread.detachNewThread { [transcript] in transcript.readLines(output.fileHandleForReading, isOutput: true) }
        Thread.detachNewThread { [transcript] in transcript.readLines(errors.fileHandleForReading, isOutput: false) }
    }

    deinit {
        guard process.isRunning else { return }
        // As quit does: the host ends its apps and removes its groups and mounts. One that
        // does not end in time is killed (a test may have left it unable to).
        closeInput()
        guard exited.wait(timeout: .now() + 5) == .timedOut else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = exited.wait(timeout: .now() + 10)
    }

    /// Sends one command line on the host's standard input.
    func send(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// Closes standard input: the host terminates its apps and exits.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Every event so far.
    var allEvents: [Event] { transcript.locked { $0.events } }

    /// Everything the host (and its apps) printed on standard error so far.
    var standardError: String { transcript.locked { $0.errorText } }

    /// Waits for the `occurrence`th event that satisfies `predicate`; fails the test with the
    /// events seen if it does not come within `timeout`.
    @discardableResult
    func waitFor(
        _ description: String, occurrence: Int = 1, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
        _ predicate: (Event) -> Bool
    ) throws -> Event {
        let found = transcript.wait(timeout: timeout) { transcript -> Event? in
            let matches = transcript.events.filter(predicate)
            return matches.count >= occurrence ? matches[occurrence - 1] : nil
        }
        guard let found else {
            let (seen, errorText) = transcript.locked { ($0.events.map(\.description).joined(separator: "\n"), $0.errorText) }
            Issue.record("no event: \(description)\nevents:\n\(seen)\nstderr:\n\(errorText)", sourceLocation: sourceLocation)
            throw WaitFailed()
        }
        return found
    }

    /// Waits for `name` to emit `event` (its `occurrence`th time).
    @discardableResult
    func waitFor(
        _ name: String, _ event: String, occurrence: Int = 1, timeout: Double = 10,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Event {
        try waitFor("\(name) \(event) #\(occurrence)", occurrence: occurrence, timeout: timeout, sourceLocation: sourceLocation) {
            $0.name == name && $0.event == event
        }
    }

    /// Waits until the host's standard error (where app output goes) contains `text`. App output
    /// and events travel on different channels, so a line may arrive after a later event.
    func waitForStandardError(containing text: String, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let found = transcript.wait(timeout: timeout, untilClosed: false) { $0.errorText.contains(text) ? true : nil }
        guard found == nil else { return }
        Issue.record("standard error never contained \(text.debugDescription):\n\(standardError)", sourceLocation: sourceLocation)
        throw WaitFailed()
    }

    /// Waits until a file of `directory` whose name ends with `suffix` holds at least `size`
    /// bytes, and returns its path; fails the test with the host's events if none does within
    /// `timeout` (a condition on the disk, checked every 10 ms, for what no event says).
    func waitForFile(
        in directory: String, suffix: String, size: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        var found: String?
        let appeared = becomesTrue(within: timeout) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            found = names.filter { $0.hasSuffix(suffix) }.map { directory + "/" + $0 }.first { path in
                ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) >= size
            }
            return found != nil
        }
        if appeared, let found { return found }
        let seen = allEvents.map(\.description).joined(separator: "\n")
        Issue.record("no *\(suffix) file of \(size) bytes or more in \(directory) within \(timeout) s; events:\n\(seen)", sourceLocation: sourceLocation)
        throw WaitFailed()
    }

    /// Waits for the host to exit and returns its status.
    func waitForExit(timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int32 {
        guard exited.wait(timeout: .now() + timeout) == .success else {
            Issue.record("apphost did not exit within \(timeout) s; stderr:\n\(standardError)", sourceLocation: sourceLocation)
            throw WaitFailed()
        }
        exited.signal()  // later calls return at once
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// What a host printed: its events (standard output) and its standard error, filled by two
/// reader threads and waited on by the test.
private final class Transcript: @unchecked Sendable {
    private let condition = NSCondition()
    private(set) var events: [Event] = []
    private(set) var errorText = ""
    private var outputClosed = false
    /// With a limit, `errorText` keeps only about the last this many bytes (an app that floods
    /// its output must not fill the test process).
    private let standardErrorLimit: Int?

    init(standardErrorLimit: Int?) {
        self.standardErrorLimit = standardErrorLimit
    }

    func locked<Value>(_ body: (Transcript) -> Value) -> Value {
        condition.lock()
        defer { condition.unlock() }
        return body(self)
    }

    /// Waits until `found` returns a value, for at most `timeout` seconds, and (`untilClosed`)
    /// no longer once the events have ended; nil if it never did.
    func wait<Value>(timeout: Double, untilClosed: Bool = true, _ found: (Transcript) -> Value?) -> Value? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value = found(self) { return value }
            if (untilClosed && outputClosed) || !condition.wait(until: deadline) { return found(self) }
        }
    }

    func readLines(_ handle: FileHandle, isOutput: Bool) {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            if !isOutput {
                appendStandardError(&pending)
                continue
            }
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending.removeSubrange(pending.startIndex...newline)
                condition.lock()
                if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] {
                    events.append(Event(fields: object))
                }
                condition.broadcast()
                condition.unlock()
            }
        }
        if isOutput {
            condition.lock()
            outputClosed = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Moves the complete lines of `pending` to `errorText` in one step (a flood of short lines
    /// must not cost a lock round per line, or the host would block writing to us), keeping
    /// only the last `standardErrorLimit` bytes when there is a limit.
    private func appendStandardError(_ pending: inout Data) {
        if let limit = standardErrorLimit, pending.count > limit {
            pending.removeFirst(pending.count - limit)  // a line that never ends: its tail only
        }
        guard let newline = pending.lastIndex(of: UInt8(ascii: "\n")) else { return }
        let text = String(decoding: pending[pending.startIndex...newline], as: UTF8.self)
        pending.removeSubrange(pending.startIndex...newline)
        condition.lock()
        errorText += text
        if let limit = standardErrorLimit, errorText.utf8.count > 2 * limit {
            errorText = String(decoding: Array(errorText.utf8.suffix(limit)), as: UTF8.self)
        }
        condition.broadcast()
        condition.unlock()
    }
}

struct WaitFailed: Error {}

/// Unmounts what a host killed before its shutdown left mounted under `path` (its containers'
/// file systems), deepest first, lazily: their loop devices detach once nothing uses them.
func unmountEverything(under path: String) {
    let mountInfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
    let points = mountInfo.split(separator: "\n").compactMap { line -> String? in
        let fields = line.split(separator: " ")
        guard fields.count > 4 else { return nil }
        let point = String(fields[4]).replacingOccurrences(of: "\\040", with: " ")
        return point.hasPrefix(path + "/") ? point : nil
    }
    for point in points.sorted(by: { $0.count > $1.count }) { _ = apphost_unmount(point, 1) }
}

/// Runs `apphost ARGUMENTS` to completion (as `user`, by setpriv from a root test, if given)
/// and returns its status and output.
/// `apphost launch`'s exit statuses (README.md, "Exit status"): the first app the system ended
/// decides it.
enum HostExit {
    static let badInput: Int32 = 1
    static let crash: Int32 = 2
    static let watchdog: Int32 = 3
    static let backgroundRules: Int32 = 4
    static let sandbox: Int32 = 5
    static let jetsam: Int32 = 6
    static let resource: Int32 = 7
    static let hostRules: Int32 = 8
}

func runApphost(_ arguments: [String], user: uid_t? = nil) throws -> (status: Int32, output: String, error: String) {
    try Paths.requireBuilt(Paths.apphost)
    let process = Process()
    if let user {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", Paths.apphost.path] + arguments
    } else {
        process.executableURL = Paths.apphost
        process.arguments = arguments
    }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
}

/// Whether a process exists (and is not a zombie we could still reap).
func processExists(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return false }
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    return !stat.contains(") Z ")
}

/// CPU time (utime + stime, clock ticks) of a process, from /proc/PID/stat.
func cpuTicks(_ pid: Int32) -> Int? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")")
    else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
    return user + system
}

/// Waits until a process (not necessarily our child) has ended: its pidfd becomes readable.
func waitUntilGone(_ pid: Int32, timeout: Double) -> Bool {
    let fd = apphost_pidfd_open(pid)
    guard fd >= 0 else { return errno == ESRCH }
    defer { close(fd) }
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, Int32(timeout * 1000)) == 1
}

extension HostSession {
    /// Whether this machine lets the host give each app a PID and a mount namespace (the same
    /// probe the host makes; where it cannot, `doctor` and the events say what is lost).
    static let machineGivesNamespaces: Bool = {
        var step: UnsafePointer<CChar>?
        let flags = Int32(APPHOST_NAMESPACE_PID_AND_MOUNT) | (getuid() == 0 ? 0 : Int32(APPHOST_NAMESPACE_USER))
        return apphost_probe_namespaces(flags, &step) == 0
    }()

    /// Whether the host gave the app its own PID and mount namespaces, as its `sandboxed` event
    /// says; the test fails if that is not what this machine allows (and the host was asked).
    func isNamespaced(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
        let namespaced = try waitFor(name, "sandboxed").detail?.contains("own PID and mount namespaces") == true
        let expected = Self.machineGivesNamespaces && !withoutNamespaces
        #expect(namespaced == expected, "the machine allows namespaces: \(Self.machineGivesNamespaces); --no-namespaces: \(withoutNamespaces)",
                sourceLocation: sourceLocation)
        return expected
    }
}

/// Whether a loop device is attached to `file` (its real path).
func isBackingALoopDevice(_ file: String) -> Bool {
    directoryEntries("/sys/block").filter { $0.hasPrefix("loop") }.contains { device in
        (try? String(contentsOfFile: "/sys/block/\(device)/loop/backing_file", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) == file
    }
}
