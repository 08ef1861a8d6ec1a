// Foundation brings a Dispatch whose C module claims struct stat: its members are visible
// only with that module imported (MemberImportVisibility).
import CDispatch
import CAppHostShims
import Foundation
import Testing

/// The launch template and the exec launcher (docs/launching.md, "How apps are launched"), against real
/// app processes: which process each app is a fork of, what the template is, and what the host
/// does when the template dies.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LauncherTests {
    /// `/proc/PID/cmdline`'s arguments.
    private func arguments(of pid: pid_t) -> [String] {
        let data = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    private func parent(of pid: pid_t) -> pid_t? {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // "PID (comm) STATE PPID …": the name may hold spaces, so count from its closing parenthesis.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").dropFirst().first.flatMap { pid_t($0) }
    }

    /// `/proc/PID/comm`: the process's (main thread's) name.
    private func name(of pid: pid_t) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    /// The host's launch template, if it runs: the one its latest `started` or `launcher` event
    /// names ("template (pid N" or "started again (pid N)"), while it is the host's child. (Found
    /// by pid: the template's clone of a namespace's init has its command line until it execs,
    /// and a standby app process too.)
    private func templates(of host: HostSession) -> [pid_t] {
        let named = host.allEvents.reversed().lazy.compactMap { event -> pid_t? in
            guard event.event == "started" || event.event == "launcher", let detail = event.detail,
                  let range = detail.range(of: "template (pid ") ?? detail.range(of: "started again (pid ") else { return nil }
            return pid_t(detail[range.upperBound...].prefix { $0.isNumber })
        }.first
        // (Its command line may still be empty just after it was started: the host resumes once
        // the exec has begun, before the new program's arguments are in place.)
        guard let pid = named, parent(of: pid) == host.process.processIdentifier, processExists(pid) else { return [] }
        return [pid]
    }

    /// The lines of `pid`'s /proc maps.
    private func maps(of pid: pid_t) -> [Substring] {
        // Read to the end: /proc files have no size, and a sized read stops at the first page.
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/maps")?.readDataToEndOfFile() ?? Data()
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
    }

    /// Where libswiftCore.so is mapped in `pid`.
    private func swiftCoreAddress(of pid: pid_t) -> String? {
        maps(of: pid).first { $0.hasSuffix("/libswiftCore.so") }.map { String($0.prefix { $0 != "-" }) }
    }

    /// The shared objects mapped in `pid`, by path.
    private func libraries(of pid: pid_t) -> Set<String> {
        Set(maps(of: pid).compactMap { line in line.firstIndex(of: "/").map { String(line[$0...]) } }.filter { $0.contains(".so") })
    }

    private func launcher(of host: HostSession) throws -> String? {
        try host.waitFor("the started event") { $0.event == "started" }.fields["launcher"] as? String
    }

    /// A configuration too large to write on a socket nobody reads yet (here 1,200 permitted
    /// task identifiers, about 120 KiB) is sent once the app process runs: the launch neither
    /// waits on the full socket nor fails.
    @Test func aConfigurationTooLargeToWriteAheadIsSentOnceTheAppRuns() throws {
        let scratch = try Scratch()
        let identifiers = (0..<1200).map { "com.example.large.task\($0)." + String(repeating: "x", count: 80) }
        let bundle = try scratch.bundle(
            "Large", changes: ["UIBackgroundModes": ["processing"], "BGTaskSchedulerPermittedIdentifiers": identifiers])
        let host = try HostSession([bundle], scratch: scratch)
        #expect(try host.waitFor("Large", "didBecomeActive").pid != nil)
        #expect(host.allEvents.filter { $0.event == "terminated" }.isEmpty)
    }

    @Test func appProcessesAreForksOfTheTemplateAndTheHostsChildren() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("Hello")], scratch: scratch, arguments: ["--launcher", "template"])
        #expect(try launcher(of: host) == "template")
        let pid = try #require(try host.waitFor("Hello", "didBecomeActive").pid)
        let template = try #require(templates(of: host).first)
        #expect(templates(of: host).count == 1)
        // One thread: a fork copies only the thread that forks.
        let status = try String(contentsOfFile: "/proc/\(template)/status", encoding: .utf8)
        #expect(status.contains("\nThreads:\t1\n"))
        #expect(arguments(of: pid).dropFirst().first == "__template")
        // The host is the parent (of the init of the app's PID namespace, if it has one), not the
        // template: the host waits for it, and it outlives the template.
        if try host.isNamespaced("Hello") {
            let initProcess = try #require(parent(of: pid))
            #expect(arguments(of: initProcess).first?.hasSuffix("apphost-init") == true)
            #expect(parent(of: initProcess) == host.process.processIdentifier)
        } else {
            #expect(parent(of: pid) == host.process.processIdentifier)
        }
        // The template has loaded every Swift library a plugin links (apphost-app links the
        // Foundation an app uses): a fork loads its plugin and the plugin's own libraries (the
        // fixture's SQLite), nothing of Swift's.
        let loaded = libraries(of: pid).subtracting(libraries(of: template)).map { URL(fileURLWithPath: $0) }
        let swiftCore = try #require(libraries(of: template).first { $0.hasSuffix("/libswiftCore.so") })
        let swiftLibraries = URL(fileURLWithPath: swiftCore).deletingLastPathComponent()
        #expect(loaded.map(\.lastPathComponent).contains("libProbeFixture.so"))
        #expect(loaded.filter { $0.deletingLastPathComponent() == swiftLibraries }.isEmpty, "loaded at launch: \(loaded)")
        let templateHandle = apphost_pidfd_open(template)
        defer { close(templateHandle) }
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        // The template ends with its host (its parent-death signal): its pidfd becomes readable.
        var ended = pollfd(fd: templateHandle, events: Int16(POLLIN), revents: 0)
        #expect(templateHandle >= 0 && poll(&ended, 1, 5000) == 1)
    }

    /// The SDK that bundle-app links plugins against (docs/launching.md, "How apps are launched"), as
    /// the bundle holds it: `libAppHostKit-HASH.so`.
    private func bundledSDK(in bundle: URL) throws -> URL {
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: bundle.path).first { $0.hasPrefix("libAppHostKit-") })
        return bundle.appendingPathComponent(name)
    }

    /// The template loads the build's SDK (`libAppHostKit.so` beside apphost-app) when it starts,
    /// and a fork finds it there when its plugin names it: it loads no copy of its own. An exec'd
    /// app process loads the bundle's.
    @Test func aForkFindsTheSDKTheTemplateLoadedAndExecLoadsTheBundles() throws {
        let templatesSDK = Paths.binaries.appendingPathComponent("libAppHostKit.so").resolvingSymlinksInPath().path
        for launcher in ["template", "exec"] {
            let scratch = try Scratch()
            let bundle = try scratch.bundle("First")
            let bundledSDK = try bundledSDK(in: bundle).path
            let host = try HostSession([bundle], scratch: scratch, arguments: ["--launcher", launcher])
            let pid = try #require(try host.waitFor("First", "didBecomeActive").pid)
            let sdks = libraries(of: pid).filter { $0.contains("libAppHostKit") }
            if launcher == "template" {
                let template = try #require(templates(of: host).first)
                #expect(libraries(of: template).filter { $0.contains("libAppHostKit") } == [templatesSDK])
                #expect(sdks == [templatesSDK])
            } else {
                #expect(sdks == [bundledSDK])
            }
            host.closeInput()
            #expect(try host.waitForExit() == 0)
        }
    }

    /// A plugin linked against another build of the SDK (here its name's hash changed in the
    /// plugin and in the bundle's SDK, as a rebuild changes it) does not bind to the template's:
    /// the fork loads the bundle's beside it, and the app runs.
    @Test func aPluginOfAnotherSDKBuildLoadsItsOwnBesideTheTemplates() throws {
        let scratch = try Scratch()
        let source = Paths.apps.appendingPathComponent("Probe.app")
        let sdk = try bundledSDK(in: source)
        let name = sdk.lastPathComponent
        let other = "libAppHostKit-" + String(repeating: "0", count: name.count - "libAppHostKit-.so".count) + ".so"
        let bundle = try scratch.bundle("Other")
        for (file, renamed) in [("libProbeFixture.so", "libProbeFixture.so"), (name, other)] {
            let data = try Data(contentsOf: source.appendingPathComponent(file))
            let patched = data.replacing(Data(name.utf8), with: Data(other.utf8))
            #expect(patched != data, "\(file) names \(name)")
            try FileManager.default.removeItem(at: bundle.appendingPathComponent(file))
            try patched.write(to: bundle.appendingPathComponent(renamed))
        }
        _ = chmod(bundle.appendingPathComponent("libProbeFixture.so").path, 0o755)
        _ = chmod(bundle.appendingPathComponent(other).path, 0o755)
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--launcher", "template"])
        #expect(try launcher(of: host) == "template")
        let pid = try #require(try host.waitFor("Other", "didBecomeActive").pid)
        let sdks = Set(libraries(of: pid).filter { $0.contains("libAppHostKit") }.map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(sdks == ["libAppHostKit.so", other])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// The SDK must be the bundle's own file: an app may read its bundle, not what a link in
    /// it points to. Launched by exec, a plugin whose SDK is a link out of its bundle cannot load
    /// it, and the launch fails saying so.
    @Test func anSDKLinkedFromOutsideTheBundleIsNotReadByExec() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Linked")
        let sdk = try bundledSDK(in: bundle)
        let outside = scratch.url.appendingPathComponent(sdk.lastPathComponent)
        try FileManager.default.moveItem(at: sdk, to: outside)
        try FileManager.default.createSymbolicLink(at: sdk, withDestinationURL: outside)
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--launcher", "exec"])
        let ended = try host.waitFor("the failed launch") { $0.event == "terminated" }
        #expect(ended.fields["kind"] as? String == "launch-failed")
        #expect((ended.fields["reason"] as? String)?.contains("cannot be loaded: \(sdk.lastPathComponent): cannot open shared object file") == true,
                "\(ended.fields["reason"] ?? "")")
        host.closeInput()
        _ = try host.waitForExit()
    }

    /// A plugin that SwiftPM linked with the SDK in it (not bundled by bundle-app) runs from a
    /// template that has loaded the SDK: the template's copy is in no plugin's scope but those
    /// that name it.
    @Test func aPluginThatCarriesTheSDKRunsFromTheTemplate() throws {
        let scratch = try Scratch()
        let bundle = try scratch.bundle("Carrier", library: "libProbeFixture.so", delegate: "ProbeFixture.AppDelegate")
        let host = try HostSession([bundle], scratch: scratch, arguments: ["--launcher", "template"])
        #expect(try launcher(of: host) == "template")
        let pid = try #require(try host.waitFor("Carrier", "didBecomeActive").pid)
        // The template's copy is there, inherited, and no other: the plugin's SDK is its own.
        let templatesSDK = Paths.binaries.appendingPathComponent("libAppHostKit.so").resolvingSymlinksInPath().path
        #expect(libraries(of: pid).filter { $0.contains("libAppHostKit") } == [templatesSDK])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// The host's standby (docs/launching.md, "How apps are launched"): in namespaces, the init of the next
    /// launch's app process, waiting as `apphost-init --standby`; without, that app process itself,
    /// a child of the host named `apphost-standby`.
    private func standbys(of host: HostSession, namespaced: Bool) -> [pid_t] {
        let apps = Set(host.allEvents.compactMap(\.pid))
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { pid_t($0) } ?? []
        // In a namespace an app's events say its app process's pid: its init, the host's child,
        // is the parent of one.
        func runsAnApp(_ pid: pid_t) -> Bool {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            return apps.contains(pid) || children.split(separator: " ").contains { pid_t($0).map(apps.contains) ?? false }
        }
        return processes.filter { pid in
            guard parent(of: pid) == host.process.processIdentifier, !runsAnApp(pid) else { return false }
            return namespaced ? arguments(of: pid).dropFirst().first == "--standby" : name(of: pid) == "apphost-standby"
        }
    }

    /// A launch takes the app process made ahead of it, which then runs the app; the next
    /// launch's is made once the launch is done; the host's end ends it. (With accounting only:
    /// under disk images, an app's first launch mounts its image, which a standby's namespace
    /// made before does not have: the next test.)
    @Test(arguments: ["standby", "template"])
    func aLaunchTakesTheStandbyMadeAheadAndTheNextIsMadeAfterIt(launcher: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch,
            arguments: ["--storage", "accounting", "--launcher", launcher])
        #expect(try self.launcher(of: host) == launcher)
        try host.waitFor("First", "didBecomeActive")
        let namespaced = try host.isNamespaced("First")
        var standby: pid_t = 0
        try waitUntil("a standby is made") { standbys(of: host, namespaced: namespaced).first.map { standby = $0 } != nil }
        if namespaced {
            // Its app process waits as pid 2 of the namespace, named so until it is configured.
            try waitUntil("its app process is named apphost-standby") {
                let child = (try? String(contentsOfFile: "/proc/\(standby)/task/\(standby)/children", encoding: .utf8))?
                    .split(separator: " ").first.flatMap { pid_t($0) }
                return child.map { name(of: $0) } == "apphost-standby"
            }
        }
        host.send("open Second")
        let pid = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        #expect(name(of: pid) == "Second")
        // The app runs in it: the app process itself, or the standby init's child.
        #expect(namespaced ? parent(of: pid) == standby : pid == standby)
        #expect(scratch.callbacks("Second").first?.hasPrefix("willFinishLaunching") == true)
        var next: pid_t = 0
        try waitUntil("the next standby is made") { standbys(of: host, namespaced: namespaced).first.map { next = $0 } != nil }
        #expect(next != standby)
        host.closeInput()
        #expect(try host.waitForExit() == 0)
        #expect(waitUntilGone(next, timeout: 5), "the standby ends with its host")
    }

    /// A standby is configured before the host makes its app's containers (in namespaces it
    /// confines itself meanwhile): a container that cannot be made fails the launch with the
    /// reason, and the configured standby ends with it; the host goes on.
    @Test func aContainerThatCannotBeMadeFailsTheStandbysLaunchAndEndsIt() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--storage", "accounting"])
        try host.waitFor("First", "didBecomeActive")
        let namespaced = try host.isNamespaced("First")
        var standby: pid_t = 0
        try waitUntil("a standby is made") { standbys(of: host, namespaced: namespaced).first.map { standby = $0 } != nil }
        // A file where tmp belongs cannot be moved aside onto a directory that is not empty.
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.second")
        try FileManager.default.createDirectory(at: container.appendingPathComponent("tmp.not-a-directory/kept"), withIntermediateDirectories: true)
        try Data("planted".utf8).write(to: container.appendingPathComponent("tmp"))
        host.send("open Second")
        let end = try host.waitFor("Second", "terminated")
        #expect(end.kind == "launch-failed")
        #expect(end.reason?.hasPrefix("cannot prepare the app's container: rename \(container.path)/tmp") == true, "\(end.reason ?? "")")
        #expect(scratch.callbacks("Second").isEmpty)
        #expect(waitUntilGone(standby, timeout: 5), "the standby ends with its launch")
        // The host goes on: the next launch's standby runs First's next launch.
        try waitUntil("the next standby is made") { standbys(of: host, namespaced: namespaced).first.map { $0 != standby } ?? false }
        host.send("terminate First")
        try host.waitFor("First", "terminated")
        host.send("open First")
        try host.waitFor("First", "didBecomeActive", occurrence: 2)
        host.closeInput()
        #expect(try host.waitForExit() == HostExit.badInput)
    }

    /// In namespaces, a standby's init makes its mount namespace before the launch, a copy of the
    /// host's mounts then: an app whose container image is mounted at its first launch (after the
    /// standby was made) does not get it, or it would see the directory beneath its image. It
    /// gets a fork made for it, in which its container is its image; its next launch takes the
    /// standby made since.
    @Test(.enabled(if: getuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0, "needs root and loop devices (disk images)"))
    func aStandbyMadeBeforeAnAppsContainerImageWasMountedIsNotUsedForIt() throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--storage", "disk-image"])
        try host.waitFor("First", "didBecomeActive")
        // A root host with loop devices gives its apps namespaces of their own.
        try #require(try host.isNamespaced("First"), "the apps of a root host run in namespaces")
        var standby: pid_t = 0
        try waitUntil("a standby is made") { standbys(of: host, namespaced: true).first.map { standby = $0 } != nil }
        host.send("open Second")
        try host.waitFor("the container's file system") { $0.event == "storage" && $0.name == "Second" }
        let first = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        #expect(parent(of: first) != standby)
        #expect(waitUntilGone(standby, timeout: 5), "the standby is ended")
        let container = scratch.stateDirectory.appendingPathComponent("containers/test.second").path
        // The app's container, in its own mount namespace, is the image the host mounted.
        func device(_ path: String) -> dev_t? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_dev : nil
        }
        #expect(device(container) != device(scratch.stateDirectory.path))
        #expect(device("/proc/\(first)/root\(container)") == device(container))

        var next: pid_t = 0
        try waitUntil("the next standby is made") { standbys(of: host, namespaced: true).first.map { next = $0 } != nil }
        host.send("terminate Second")
        try host.waitFor("Second", "terminated")
        host.send("open Second")
        let second = try #require(try host.waitFor("Second", "didBecomeActive", occurrence: 2).pid)
        #expect(parent(of: second) == next)
        #expect(device("/proc/\(second)/root\(container)") == device(container))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// A standby (in namespaces, its init) adds the system paths every app may read to its
    /// Landlock ruleset before its launch. A rule names an inode, so a file among them replaced since (written anew and
    /// renamed over, as `useradd` does /etc/passwd and `ldconfig` /etc/ld.so.cache) would be out
    /// of the app's reach: the launch adds a rule for what the path names then. Puts an identical
    /// copy in place of a file of /etc for the while, then the file back.
    @Test(.enabled(if: getuid() == 0 && apphost_landlock_abi_version() > 0 && replaceableSystemFile != nil,
                   "needs root, Landlock and a regular file of /etc among the rules (/etc/protocols, /etc/services or /etc/hosts)"))
    func aSystemFileReplacedAfterAStandbyWasMadeIsReadableByTheAppLaunchedFromIt() throws {
        let path = try #require(Self.replaceableSystemFile)
        let scratch = try Scratch()
        let reader = try scratch.bundle("Reader", behavior: ["sandboxProbes": ["read-other"], "otherFile": path])
        let host = try HostSession([try scratch.bundle("First"), reader], scratch: scratch, arguments: ["--storage", "accounting"])
        try host.waitFor("First", "didBecomeActive")
        let namespaced = try host.isNamespaced("First")
        var standby: pid_t = 0
        try waitUntil("a standby is made") { standbys(of: host, namespaced: namespaced).first.map { standby = $0 } != nil }
        var process = standby
        // In namespaces its init holds the app's ruleset (and passes it to the app process at
        // the launch); without, the app process itself.
        try waitUntil("its ruleset is made") {
            if namespaced {
                guard let child = (try? String(contentsOfFile: "/proc/\(standby)/task/\(standby)/children", encoding: .utf8))?
                    .split(separator: " ").first.flatMap({ pid_t($0) }) else { return false }
                process = child
            }
            let holder = namespaced ? standby : process
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(holder)/fd")) ?? []
            return descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(holder)/fd/\($0)")) == "anon_inode:[landlock-ruleset]" }
        }
        let putBack = try replaceByACopy(path)
        defer { putBack() }
        host.send("open Reader")
        let pid = try #require(try host.waitFor("Reader", "didBecomeActive").pid)
        #expect(pid == process)
        #expect(scratch.recorded("Reader").filter { $0.hasPrefix("probe ") } == ["probe read-other: ok"])
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// A regular file of /etc that a standby's ruleset names (`Landlock.sharedRules`), on the same
    /// file system as /etc (so that a copy can be renamed over it).
    static let replaceableSystemFile: String? = ["/etc/protocols", "/etc/services", "/etc/hosts"].first { path in
        var file = stat()
        var directory = stat()
        return lstat(path, &file) == 0 && file.st_mode & S_IFMT == S_IFREG && stat("/etc", &directory) == 0 && file.st_dev == directory.st_dev
    }

    /// Puts a copy of `path` (contents, mode, owner) in its place, atomically, keeping the file
    /// itself under a second name beside it: the same contents, another inode. Returns what puts
    /// the file back (its inode, so its extended attributes and label too).
    private func replaceByACopy(_ path: String) throws -> () -> Void {
        var info = stat()
        #expect(stat(path, &info) == 0)
        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        let kept = "\(path).apphost-test-\(getpid())"
        let copy = kept + ".copy"
        guard link(path, kept) == 0 else {
            Issue.record("cannot link \(path) to \(kept): errno \(errno)")
            return {}
        }
        try contents.write(to: URL(fileURLWithPath: copy))
        #expect(chmod(copy, info.st_mode & 0o7777) == 0 && chown(copy, info.st_uid, info.st_gid) == 0)
        guard rename(copy, path) == 0 else {
            Issue.record("cannot rename a copy over \(path): errno \(errno)")
            unlink(copy)
            unlink(kept)
            return {}
        }
        var replaced = stat()
        #expect(stat(path, &replaced) == 0 && replaced.st_ino != info.st_ino)
        return { #expect(rename(kept, path) == 0) }
    }

    /// A standby killed while it waits is not used, whichever of its processes is killed (in
    /// namespaces, its app process or its init): the launch forks an app process as without one.
    @Test(arguments: [false, true], ["standby", "template"])
    func aStandbyKilledWhileItWaitsIsNotUsed(killingItsInit: Bool, launcher: String) throws {
        let scratch = try Scratch()
        let host = try HostSession(
            [try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--launcher", launcher])
        try host.waitFor("First", "didBecomeActive")
        let namespaced = try host.isNamespaced("First")
        var standby: pid_t = 0
        try waitUntil("a standby is made") { standbys(of: host, namespaced: namespaced).first.map { standby = $0 } != nil }
        var victim = standby
        if namespaced && !killingItsInit {
            try waitUntil("its app process waits") {
                let child = (try? String(contentsOfFile: "/proc/\(standby)/task/\(standby)/children", encoding: .utf8))?
                    .split(separator: " ").first.flatMap { pid_t($0) }
                child.map { victim = $0 }
                return child.map { name(of: $0) } == "apphost-standby"
            }
        }
        kill(victim, SIGKILL)
        try waitUntil("it is gone") { !processExists(victim) }
        host.send("open Second")
        let pid = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        #expect(pid != victim && parent(of: pid) != standby)
        #expect(arguments(of: pid).dropFirst().first == (launcher == "template" ? "__template" : "__app-process"))
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Under the template launcher every app shares the template's address-space layout and
    /// seeds (one app's leak of an address is every app's); exec'd, ahead of its launch (the
    /// default) or at it, each app has its own: libc, libswiftCore, the heap, the main stack and
    /// the kernel's random bytes (AT_RANDOM, whence glibc's stack canary and pointer guard).
    @Test func forksShareTheTemplatesLayoutAndExecGivesEachAppItsOwn() throws {
        let aslr = (try? String(contentsOfFile: "/proc/sys/kernel/randomize_va_space", encoding: .utf8))?.hasPrefix("2") == true
        for launcher in ["standby", "template", "exec"] {
            let scratch = try Scratch()
            let host = try HostSession(
                [try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--launcher", launcher])
            #expect(try self.launcher(of: host) == launcher)
            let first = try #require(try host.waitFor("First", "didBecomeActive").pid)
            host.send("open Second")
            let second = try #require(try host.waitFor("Second", "didBecomeActive").pid)
            #expect(arguments(of: first).dropFirst().first == (launcher == "template" ? "__template" : "__app-process"))
            // Under every launcher an app process runs apphost-app, the runner without the host.
            #expect(arguments(of: first).first.map { URL(fileURLWithPath: $0).lastPathComponent } == "apphost-app")
            #expect(templates(of: host).count == (launcher == "template" ? 1 : 0))
            let layouts = (try #require(layout(of: first)), try #require(layout(of: second)))
            #expect(layouts.0.count == 5 && layouts.1.count == 5, "\(layouts)")
            if launcher == "template" {
                #expect(layouts.0 == layouts.1)
            } else if aslr {
                for (part, address) in layouts.0 { #expect(layouts.1[part] != address, "\(launcher): \(part) is the same in both apps") }
            }
            host.closeInput()
            #expect(try host.waitForExit() == 0)
        }
    }

    /// Where `pid`'s libc, libswiftCore, heap and main stack begin, and its AT_RANDOM bytes.
    private func layout(of pid: pid_t) -> [String: String]? {
        var parts: [String: String] = [:]
        let lines = maps(of: pid)
        for (part, suffix) in [("libc", "/libc.so.6"), ("libswiftCore", "/libswiftCore.so"), ("heap", "[heap]"), ("stack", "[stack]")] {
            parts[part] = lines.first { $0.hasSuffix(suffix) }.map { String($0.prefix { $0 != "-" }) }
        }
        // AT_RANDOM (25) in /proc/PID/auxv: the address of 16 random bytes, read through /proc/PID/mem.
        guard let auxv = FileManager.default.contents(atPath: "/proc/\(pid)/auxv") else { return nil }
        let words = auxv.withUnsafeBytes { Array($0.bindMemory(to: UInt64.self)) }
        if let index = stride(from: 0, to: words.count - 1, by: 2).first(where: { words[$0] == 25 }) {
            let descriptor = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
            defer { if descriptor >= 0 { close(descriptor) } }
            var bytes = [UInt8](repeating: 0, count: 16)
            let count: Int = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 16, off_t(Int64(bitPattern: words[index + 1]))) }
            if count == 16 { parts["AT_RANDOM"] = bytes.map { String($0, radix: 16) }.joined() }
        }
        return parts
    }

    /// The kilobytes of anonymous memory in `pid`'s mapping of libswiftCore's code
    /// (/proc/PID/smaps), if it has one.
    private func anonymousKilobytesInSwiftCoreCode(of pid: pid_t) -> Int? {
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/smaps")?.readDataToEndOfFile() ?? Data()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard let header = lines.firstIndex(where: { $0.hasSuffix("/libswiftCore.so") && $0.split(separator: " ").dropFirst().first == "r-xp" })
        else { return nil }
        let field = lines[(header + 1)...].prefix { !$0.contains(".so") }.first { $0.hasPrefix("Anonymous:") }
        return field.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
    }

    /// A fork of the template has the page-table entries of what the template's libraries have
    /// touched, made so by the one private page each of its read-only library mappings is given
    /// (`apphost_template_share_page_tables`): the app does not fault them in again. An exec'd
    /// app process has no such page.
    @Test func forksInheritTheTemplatesLibraryPagesAndExecDoesNot() throws {
        for launcher in ["template", "exec"] {
            let scratch = try Scratch()
            let host = try HostSession([try scratch.bundle("First")], scratch: scratch, arguments: ["--launcher", launcher])
            let pid = try #require(try host.waitFor("First", "didBecomeActive").pid)
            #expect(anonymousKilobytesInSwiftCoreCode(of: pid) == (launcher == "template" ? Int(getpagesize() / 1024) : 0))
            if launcher == "template" {
                let template = try #require(templates(of: host).first, "the host's launch template runs")
                #expect(anonymousKilobytesInSwiftCoreCode(of: template) == Int(getpagesize() / 1024))
            }
            host.closeInput()
            #expect(try host.waitForExit() == 0)
        }
    }

    @Test func aKilledTemplateIsStartedAgainAndRunningAppsLiveOn() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--launcher", "template"])
        try host.waitFor("First", "didBecomeActive")
        let first = try #require(templates(of: host).first)
        kill(first, SIGKILL)
        let ended = try host.waitFor("the template's end") { $0.event == "launcher" && $0.detail?.hasPrefix("exec:") == true }
        #expect(ended.detail == "exec: the launch template (pid \(first)) killed by signal 9 (Killed); apps launch by exec until it is back")
        let again = try host.waitFor("the template's restart") { $0.event == "launcher" && $0.detail?.hasPrefix("template: started again") == true }
        let second = try #require(templates(of: host).first, "no template after \(again.detail ?? "")")
        #expect(again.detail == "template: started again (pid \(second))")
        // The app forked from the dead template still answers.
        host.send("memory-warning First")
        try host.waitFor("First", "didReceiveMemoryWarning")
        host.send("open Second")
        let pid = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        #expect(arguments(of: pid).dropFirst().first == "__template")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    @Test func aTemplateThatKeepsDyingLeavesLaunchesToExec() throws {
        let scratch = try Scratch()
        let host = try HostSession([try scratch.bundle("First"), try scratch.bundle("Second")], scratch: scratch, arguments: ["--launcher", "template"])
        try host.waitFor("First", "didBecomeActive")
        for restart in 1...3 {
            kill(try #require(templates(of: host).first), SIGKILL)
            try host.waitFor("restart \(restart)", occurrence: restart) { $0.event == "launcher" && $0.detail?.hasPrefix("template: started again") == true }
        }
        kill(try #require(templates(of: host).first), SIGKILL)
        let last = try host.waitFor("the last end") { $0.event == "launcher" && $0.detail?.hasSuffix("apps launch by exec until the host restarts") == true }
        #expect(last.detail?.contains("it ended 4 times in 60.0 s") == true)
        #expect(templates(of: host).isEmpty)
        host.send("open Second")
        let pid = try #require(try host.waitFor("Second", "didBecomeActive").pid)
        #expect(arguments(of: pid).dropFirst().first == "__app-process")
        host.closeInput()
        #expect(try host.waitForExit() == 0)
    }

    /// Every event of an app says the app process's pid, `launching` included: in a PID
    /// namespace, not its init's.
    @Test func launchingSaysTheAppProcesssPidUnderEitherLauncher() throws {
        for launcher in ["standby", "template", "exec"] {
            let scratch = try Scratch()
            let host = try HostSession([try scratch.bundle("First")], scratch: scratch, arguments: ["--launcher", launcher])
            let active = try host.waitFor("First", "didBecomeActive")
            let launching = try host.waitFor("First", "launching")
            #expect(launching.pid != nil && launching.pid == active.pid)
            if try host.isNamespaced("First") {
                #expect(arguments(of: try #require(active.pid)).dropFirst().first == (launcher == "template" ? "__template" : "__app-process"))
            }
            host.closeInput()
            #expect(try host.waitForExit() == 0)
        }
    }
}
