import AppHostProtocol
import AppHostRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How an iteration's first host dies.
enum KillPlan: CustomStringConvertible {
    /// SIGKILL this long after it started.
    case afterMilliseconds(Int)
    /// SIGKILL the moment the nth replacement of a store begins to be written.
    case midStoreWrite(Int)
    /// SIGKILL one of its apps (by name) at the first time, then the host at the second.
    case app(String, Int, Int)
    /// SIGKILL its launch template at the first time, then the host at the second.
    case template(Int, Int)

    var description: String {
        switch self {
        case .afterMilliseconds(let ms): "host killed \(ms) ms after its start"
        case .midStoreWrite(let nth): "host killed as store write #\(nth) began"
        case .app(let name, let first, let then): "\(name) killed at \(first) ms, the host at \(then) ms"
        case .template(let first, let then): "the launch template killed at \(first) ms, the host at \(then) ms"
        }
    }

    static func random(_ random: inout SplitMix) -> KillPlan {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<4: .afterMilliseconds(Int.random(in: 0...2500, using: &random))
        case 4..<7: .midStoreWrite(Int.random(in: 1...14, using: &random))
        case 7..<9:
            .app(["Mover", "Planner", "Stager"].randomElement(using: &random)!, Int.random(in: 100...1500, using: &random),
                 Int.random(in: 1600...2600, using: &random))
        default: .template(Int.random(in: 100...1500, using: &random), Int.random(in: 1600...2600, using: &random))
        }
    }
}

/// One iteration: a fresh state directory, a host killed by the plan, a second host that must
/// find everything the first said it kept, and the invariants checked.
struct Iteration {
    let number: Int
    let apphost: String
    let probe: String
    let server: ChaosServer
    let verbose: Bool
    let keep: Bool

    static let downloads = [(task: 1, size: 900_000, pace: 25), (task: 2, size: 200_000, pace: 10)]
    static let uploadBytes = 150_000
    static let keptMiB = 3

    func perform(_ random: inout SplitMix) -> [String] {
        let scratch = "/tmp/apphost-chaos-\(getpid())-\(number)"
        try? FileManager.default.removeItem(atPath: scratch)
        try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var kept = false
        defer { if !kept { Self.remove(scratch) } }
        let state = scratch + "/state"
        let bundles: [String: String]
        do {
            bundles = try makeBundles(in: scratch)
        } catch {
            return ["cannot make the bundles: \(error)"]
        }
        let plan = KillPlan.random(&random)
        // Half the iterations first fill Keeper's container on a host that does not limit
        // storage; the killed host then moves it into a disk image, of a size chosen here.
        let migrate = Bool.random(using: &random)
        let limit = ["64", "256", "2048"].randomElement(using: &random)!
        if verbose { say("chaos: iteration \(number): \(plan)\(migrate ? ", Keeper's container moved into a \(limit) MiB image" : "")") }
        var keptLog: String?
        if migrate {
            guard let filling = try? ChaosHost(apphost: apphost, stateDirectory: state, bundles: [bundles["Keeper0"]!], arguments: ["--storage", "accounting"]) else {
                return ["cannot start the host that fills Keeper's container"]
            }
            let log = state + "/containers/test.keeper/Documents/lifecycle.log"
            let filled = Self.waitUntil(seconds: 20) { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("storage document: ok") }
            filling.closeInput()
            filling.waitForExit()
            guard filled else { return ["Keeper did not fill its container (\(Self.containerFiles(state, "test.keeper")))"] }
            keptLog = try? String(contentsOfFile: log, encoding: .utf8)
        }

        // The first host, driven by a script of commands, and killed by the plan.
        let firstApps = ["Mover", "Planner", "Stager"] + (migrate ? ["Keeper"] : [])
        guard let first = try? ChaosHost(
            apphost: apphost, stateDirectory: state, bundles: firstApps.map { bundles[$0]! }, arguments: migrate ? ["--storage-limit", limit] : [])
        else {
            return ["cannot start the first host"]
        }
        let start = Date()
        var watch: StoreWriteWatch?
        if case .midStoreWrite(let nth) = plan {
            watch = StoreWriteWatch(directories: [state, state + "/transfers"], nth: nth) { [first] in first.kill() }
        }
        let script = (migrate ? ["open Keeper"] : []) + ["home", "open Planner", "authorize Planner location whenInUse", "open Stager", "authorize Stager location always",
                      "scenes --json", "home", "advance 700", "open Mover", "advance 400", "home"]
        var deadline = 4000
        switch plan {
        case .afterMilliseconds(let ms): deadline = ms
        case .app(_, _, let then), .template(_, let then): deadline = then
        case .midStoreWrite: break
        }
        var sideKill: (at: Int, pid: () -> Int32?)?
        switch plan {
        case .app(let name, let at, _):
            sideKill = (at, { first.events.last { $0.name == name && $0.pid != nil && $0.event != "launching" }?.pid })
        case .template(let at, _):
            sideKill = (at, { Self.templatePID(first.events) })
        default: break
        }
        first.waitFor(5) { $0.event == "didBecomeActive" }
        var next = 0
        while first.process.isRunning {
            let elapsed = Int(Date().timeIntervalSince(start) * 1000)
            if elapsed >= deadline { break }
            if let (at, pid) = sideKill, elapsed >= at {
                if let pid = pid() { kill(pid, SIGKILL) }
                sideKill = nil
            }
            if next < script.count, Int.random(in: 0..<4, using: &random) == 0 {
                first.send(script[next])
                next += 1
            }
            usleep(useconds_t(Int.random(in: 5...60, using: &random) * 1000))
        }
        first.kill()
        first.waitForExit()
        watch?.stop()
        let killedAt = Date()

        // What survived: the stores as the dead host left them, the mounts it left.
        let firstEvents = first.events
        let stores = Kept(state: state)
        let leftoverMounts = Self.mounts(under: scratch)
        let deadPIDs = Set(firstEvents.compactMap(\.pid) + [first.pid] + (Self.templatePID(firstEvents).map { [$0] } ?? []))

        var violations: [String] = []
        violations += checkRequests(firstEvents, stores)
        violations += checkKept(firstEvents, stores)

        // The next host: nothing of the dead one may outlive its start.
        guard let second = try? ChaosHost(apphost: apphost, stateDirectory: state, bundles: ["Front", "Mover", "Planner", "Stager", "Keeper"].map { bundles[$0]! }) else {
            return violations + ["cannot start the second host"]
        }
        defer {
            second.kill()
            second.waitForExit()
        }
        guard let started = second.waitFor(15, { $0.event == "started" }) else {
            return violations + ["the second host did not start: \(second.events.map(\.fields).description.prefix(400))"]
        }
        _ = started
        for pid in deadPIDs where Self.isAlive(pid, startedBefore: killedAt) {
            violations.append("process \(pid) of the dead host (\(Self.command(pid))) outlived the next host's start")
        }
        let stillMounted = Set(Self.mounts(under: scratch).map(\.id)).intersection(leftoverMounts.map(\.id))
        for mount in leftoverMounts where stillMounted.contains(mount.id) {
            violations.append("the dead host's mount of \(mount.point) outlived the next host's start")
        }
        if let warning = second.events.first(where: { $0.event == "warning" && ($0.detail.contains("unreadable") || $0.detail.contains("cannot read")) }) {
            violations.append("the next host could not read a store: \(warning.detail)")
        }

        // Every transfer delivered, then the host quits and the apps' records are read.
        let transfersDone = Self.waitUntil(seconds: 45) { Self.recordFiles(state).isEmpty }
        if !transfersDone {
            violations.append("transfers still kept 45 s into the next host: \(Self.recordFiles(state).joined(separator: ", ")); its transfer events: "
                + second.events.filter { $0.event == "transfer" }.map(\.detail).joined(separator: " | "))
        }
        if let keptLog {
            // Keeper launched: its container mounted, whole, whatever the killed host was doing.
            second.send("open Keeper")
            if second.waitFor(20, { $0.name == "Keeper" && $0.event == "didBecomeActive" }) == nil {
                violations.append("Keeper did not launch in the next host: " + second.events.filter { $0.name == "Keeper" }.map(\.detail).joined(separator: " | "))
            } else {
                violations += checkContainer(state, keptLog: keptLog)
            }
        }
        second.closeInput()
        second.waitForExit(timeout: 30)
        violations += checkTransfers(firstEvents, second.events, log: Self.containerFile(state, "test.mover", "Documents/lifecycle.log"))
        kept = keep && !violations.isEmpty
        if kept { say("chaos: iteration \(number) kept in \(scratch)") }
        if verbose {
            let created = (firstEvents + second.events).filter { $0.event == "transfer" && $0.detail.contains(" created") }.count
            say("chaos: iteration \(number): \(firstEvents.count) events before the kill, \(created) transfers created, \(stores.pending.count) requests pending")
        }
        return violations
    }

    // MARK: Invariants

    /// Every request a host said it took (taskSubmitted) is pending in the store it left, or ran
    /// (the scheduler said it was due) after that: one or the other, never both, never neither.
    /// One the dead host took to run whose task the app had not begun is kept as taken, and the
    /// next host hands it back: not lost, whether or not the due line reached its output.
    func checkRequests(_ events: [Event], _ kept: Kept) -> [String] {
        var violations: [String] = []
        for identifier in ["chaos.refresh", "chaos.clean"] {
            guard let acknowledged = events.lastIndex(where: { $0.name == "Planner" && $0.event == "taskSubmitted" && $0.detail.contains(" \(identifier)") }) else { continue }
            let ran = events[(acknowledged + 1)...].contains { $0.name == "Planner" && $0.event == "scheduler" && $0.detail.contains("due:") && $0.detail.contains(identifier) }
            let pending = kept.pending.contains(identifier)
            if ran && pending { violations.append("the request \(identifier) ran and is still pending") }
            if !ran && !pending && !kept.taken.contains(identifier) {
                violations.append("the request \(identifier) was acknowledged (taskSubmitted) and is neither pending nor run")
            }
        }
        return violations
    }

    /// The fetch interval, scene sessions and authorizations a host said it kept are in its stores.
    func checkKept(_ events: [Event], _ kept: Kept) -> [String] {
        var violations: [String] = []
        if events.contains(where: { $0.name == "Planner" && $0.event == "fetchInterval" }), !kept.fetchInterval {
            violations.append("Planner's fetch interval was acknowledged and is not in the scheduler's store")
        }
        for event in events where event.event == "location" && event.detail.hasPrefix("authorization ") {
            let value = String(event.detail.dropFirst("authorization ".count))
            let identifier = "test.\(event.name.lowercased())"
            if kept.authorizations[identifier] != value {
                violations.append("\(event.name)'s location authorization \(value) was acknowledged; the store has \(kept.authorizations[identifier] ?? "none")")
            }
        }
        for event in events where event.event == "scene" {
            guard let session = event.fields["session"] as? String else { continue }
            if !(kept.sceneSessions["test.\(event.name.lowercased())"] ?? []).contains(session) {
                violations.append("\(event.name)'s scene session \(session) was listed and is not in the scene store")
            }
        }
        return violations
    }

    /// Keeper's files, made before the killed host moved its container into an image, are all
    /// there and whole: none lost, none half-moved.
    func checkContainer(_ state: String, keptLog: String) -> [String] {
        let container = state + "/containers/test.keeper"
        var violations: [String] = []
        if let data = FileManager.default.contents(atPath: container + "/Documents/keep.bin") {
            if data.count != Self.keptMiB << 20 || data.contains(where: { $0 != 0xA5 }) {
                violations.append("Keeper's Documents/keep.bin is not whole: \(data.count) bytes")
            }
        } else {
            violations.append("Keeper's Documents/keep.bin is lost; the container holds \(Self.containerFiles(state, "test.keeper"))")
        }
        let log = (try? String(contentsOfFile: container + "/Documents/lifecycle.log", encoding: .utf8)) ?? ""
        if !log.hasPrefix(keptLog) {
            violations.append("Keeper's Documents/lifecycle.log lost what it held (\(keptLog.count) bytes before, now \(log.count), starting \(log.prefix(80).debugDescription))")
        }
        return violations
    }

    static func containerFiles(_ state: String, _ identifier: String) -> String {
        let root = state + "/containers/" + identifier
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return files.isEmpty ? "nothing" : files.sorted().joined(separator: ", ")
    }

    /// What a finding starts with when the app, not the host, lost a delivery: the dead host
    /// handed the transfer to the running app, whose process died with the host inside its
    /// delegate's calls for it (the SDK records a delivery just before those calls: at most once
    /// for an app killed within them). Counted apart, not as a violation.
    static let interruptedDelivery = "delivery interrupted: "

    /// Every transfer a host said it created reached the app exactly once, whole.
    func checkTransfers(_ firstEvents: [Event], _ secondEvents: [Event], log: String?) -> [String] {
        let events = firstEvents + secondEvents
        let created = Set(events.filter { $0.name == "Mover" && $0.event == "transfer" && $0.detail.contains(" created") }.compactMap { event -> Int? in
            guard let range = event.detail.range(of: "task ") else { return nil }
            return Int(event.detail[range.upperBound...].prefix { $0.isNumber })
        })
        guard !created.isEmpty else { return [] }
        guard let log else { return ["Mover's lifecycle.log cannot be read, though \(created.count) transfers were created"] }
        let lines = log.split(separator: "\n").map(String.init)
        var violations: [String] = []
        for task in created.sorted() {
            let completions = lines.filter { $0.hasPrefix("didComplete task=\(task) ") }
            let handed = firstEvents.contains { $0.name == "Mover" && $0.event == "transfer" && $0.detail.contains("task \(task) of session")
                && $0.detail.hasSuffix(" sent to the running app") }
            let begun = lines.contains { $0.hasPrefix("didFinishDownloading task=\(task) ") }
            if completions.isEmpty, handed || begun {
                violations.append(Self.interruptedDelivery
                    + "transfer task \(task) was handed to Mover by the host that was killed, and Mover's process died with it before its delegate's calls for it ended"
                    + (begun ? " (didFinishDownloading recorded, didComplete not)" : ""))
                continue
            }
            if completions.count != 1 {
                violations.append("transfer task \(task) was delivered \(completions.count) times: \(completions)")
                continue
            }
            if !completions[0].contains("error=nil") {
                violations.append("transfer task \(task) completed with an error: \(completions[0])")
            }
            if let download = Self.downloads.first(where: { $0.task == task }) {
                let finished = lines.filter { $0.hasPrefix("didFinishDownloading task=\(task) ") }
                if finished.count != 1 || !finished[0].contains("moved=true bytes=\(download.size) ") {
                    violations.append("download task \(task) reached the app as \(finished) (expected one whole file of \(download.size) bytes)")
                }
            }
        }
        return violations
    }

    // MARK: The apps

    /// Copies of the Probe fixture: Mover (two downloads and an upload), Planner (two task
    /// requests and a fetch interval), Stager (scenes), Front (nothing).
    func makeBundles(in directory: String) throws -> [String: String] {
        let manifest: [String: Any] = [
            "UIApplicationSupportsMultipleScenes": false,
            "UISceneConfigurations": ["UIWindowSceneSessionRoleApplication": [[
                "UISceneConfigurationName": "Default Configuration", "UISceneDelegateClassName": "ProbeFixture.SceneDelegate",
            ]]],
        ]
        var transfers: [[String: Any]] = Self.downloads.map { ["url": server.url("/file/\($0.size)?pace=\($0.pace)")] }
        transfers.append(["kind": "upload", "url": server.url("/upload")])
        let apps: [String: ([String: Any], [String: Any])] = [
            "Mover": (["transfers": transfers, "uploadBytes": Self.uploadBytes], ["AppHostEntitlements": ["com.apple.security.network.client": true]]),
            "Planner": ([
                "registerTasks": ["chaos.refresh", "chaos.clean"], "fetchInterval": 1800.0, "task": "complete",
                "submit": [["identifier": "chaos.refresh", "earliestIn": 600.0], ["identifier": "chaos.clean", "kind": "processing", "earliestIn": 900.0]],
            ], ["UIBackgroundModes": ["fetch", "processing"], "BGTaskSchedulerPermittedIdentifiers": ["chaos.refresh", "chaos.clean"]]),
            "Stager": ([:], ["UIApplicationSceneManifest": manifest]),
            "Front": ([:], [:]),
            // Keeper's container is filled by a host without storage limits (Keeper0), then
            // moved into a disk image (and resized) by the host that is killed.
            "Keeper0": (["storage": ["documentMiB": Self.keptMiB]], ["CFBundleName": "Keeper", "CFBundleIdentifier": "test.keeper"]),
            "Keeper": ([:], [:]),
        ]
        var paths: [String: String] = [:]
        for (name, (behavior, changes)) in apps {
            try FileManager.default.createDirectory(atPath: directory + "/\(name).app", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            for file in try FileManager.default.contentsOfDirectory(atPath: probe) where file != "Info.plist" {
                try FileManager.default.copyItem(atPath: probe + "/" + file, toPath: directory + "/\(name).app/" + file)
            }
            let data = try Data(contentsOf: URL(fileURLWithPath: probe + "/Info.plist"))
            guard var info = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { throw ChaosError("Probe.app's Info.plist") }
            info["CFBundleName"] = name
            info["CFBundleIdentifier"] = "test.\(name.lowercased())"
            let bundle = directory + "/\(name).app"
            info["ProbeBehavior"] = behavior
            for (key, value) in changes { info[key] = value }
            try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: URL(fileURLWithPath: bundle + "/Info.plist"))
            chmodTree(bundle)
            paths[name] = bundle
        }
        return paths
    }

    private func chmodTree(_ path: String) {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { chmod(path + "/" + file, 0o755) }
    }

    // MARK: The machine

    static func templatePID(_ events: [Event]) -> Int32? {
        guard let detail = events.first(where: { $0.event == "started" })?.detail, let range = detail.range(of: "template (pid ") else { return nil }
        return Int32(detail[range.upperBound...].prefix { $0.isNumber })
    }

    struct Mount { var id: String; var point: String }

    /// The mounts at or below `path` (this process's mount table, which a host's mounts are in).
    static func mounts(under path: String) -> [Mount] {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4].hasPrefix(path) else { return nil }
            return Mount(id: String(fields[0]), point: String(fields[4]))
        }
    }

    /// Whether `pid` is a process that began before `date` (not a later one given the same pid).
    static func isAlive(_ pid: Int32, startedBefore date: Date) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM,
              let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]), fields[0] != "Z",
              let uptime = (try? String(contentsOfFile: "/proc/uptime", encoding: .utf8))?.split(separator: " ").first.flatMap({ Double($0) })
        else { return false }
        let started = Date().addingTimeInterval(ticks / Double(sysconf(Int32(_SC_CLK_TCK))) - uptime)
        return started < date
    }

    static func command(_ pid: Int32) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func recordFiles(_ state: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: state + "/transfers")) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    /// A file of a container: in its directory, or (its file system unmounted) read from its disk
    /// image with debugfs once no loop device holds the image.
    static func containerFile(_ state: String, _ identifier: String, _ relative: String) -> String? {
        if let text = try? String(contentsOfFile: "\(state)/containers/\(identifier)/\(relative)", encoding: .utf8) { return text }
        let image = "\(state)/storage/containers/\(identifier).ext4"
        guard FileManager.default.fileExists(atPath: image) else { return nil }
        let real = URL(fileURLWithPath: image).resolvingSymlinksInPath().path
        _ = waitUntil(seconds: 10) { !isBackingALoopDevice(real) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/debugfs")
        process.arguments = ["-R", "cat /\(relative)", image]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }

    static func isBackingALoopDevice(_ file: String) -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/block")) ?? []).filter { $0.hasPrefix("loop") }.contains { device in
            (try? String(contentsOfFile: "/sys/block/\(device)/loop/backing_file", encoding: .utf8))?.trimmingCharacters(in: .newlines) == file
        }
    }

    /// Removes a scratch directory, unmounting what is left mounted below it first.
    static func remove(_ path: String) {
        for mount in mounts(under: path).sorted(by: { $0.point.count > $1.point.count }) { umount2(mount.point, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The stores a dead host left in its state directory, read as the next host reads them.
struct Kept {
    var pending: Set<String> = []
    /// Taken to run, not begun by the app: the next host hands them back as pending.
    var taken: Set<String> = []
    var fetchInterval = false
    var authorizations: [String: String] = [:]
    var sceneSessions: [String: Set<String>] = [:]

    init(state: String) {
        let schedule = ScheduleStore(stateDirectory: URL(fileURLWithPath: state)).load().schedule
        let planner = schedule.apps["test.planner"]
        pending = Set(planner?.requests.map(\.identifier) ?? [])
        taken = Set(planner?.taken?.map(\.identifier) ?? [])
        fetchInterval = planner?.fetchInterval != nil
        if let data = FileManager.default.contents(atPath: state + "/location-authorization.json"),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: String] {
            authorizations = object
        }
        if let data = FileManager.default.contents(atPath: state + "/scene-sessions.json"),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: [String: Any]] {
            for (app, value) in object {
                let sessions = value["sessions"] as? [[String: Any]] ?? []
                sceneSessions[app] = Set(sessions.compactMap { $0["identifier"] as? String })
            }
        }
    }
}
