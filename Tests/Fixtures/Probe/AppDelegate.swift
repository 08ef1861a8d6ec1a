import AppHostKit
import Foundation
import Synchronization

// The test fixture app. Each end-to-end test gives it a behaviour through the Info.plist key
// ProbeBehavior, and reads what it observed from Documents/lifecycle.log in its container: the
// tests check what the app saw, not what the host says it did.

/// A class that exists but does not conform to ApplicationDelegate.
final class NotADelegate {}

final class AppDelegate: ApplicationDelegate {
    var behavior: [String: Any] = [:]
    private var task = BackgroundTaskIdentifier.invalid
    private lazy var held = HeldResources { [weak self] line in self?.record(line) }
    private let memoryUse = MemoryUse()
    var transferProbe: TransferProbe?
    private lazy var continuous = ContinuousProbe(behavior: behavior) { [weak self] line in self?.record(line) }

    func record(_ line: String) {
        let url = Application.shared.containerURL.appendingPathComponent("Documents/lifecycle.log")
        let data = Data((line + "\n").utf8)
        if let handle = try? FileHandle(forWritingTo: url) {
            handle.seekToEndOfFile()
            handle.write(data)
            try? handle.close()
        } else {
            try? data.write(to: url)
        }
    }

    func step(_ name: String, _ application: Application) {
        record("\(name) \(application.applicationState) main=\(Thread.isMainThread)")
        if behavior["crashIn"] as? String == name { crash() }
        if behavior["beginTaskIn"] as? String == name { beginTasks(application) }
        if behavior["releaseIn"] as? String == name { held.release() }
        if behavior["busyIn"] as? String == name { startBusyThreads(1) }
        if let grow = behavior["growMiB"] as? [String: Any], grow["in"] as? String == name {
            memoryUse.grow(step: grow["step"] as? Int ?? 10, every: grow["every"] as? Double ?? 0.05, upTo: grow["upTo"] as? Int)
        }
        // The main thread blocked just after the callback returns (expiration handlers cannot run).
        if behavior["blockMainAfter"] as? String == name {
            DispatchQueue.main.async { Thread.sleep(forTimeInterval: 3600) }
        }
        if behavior["blockIn"] as? String == name {
            Thread.sleep(forTimeInterval: behavior["blockSeconds"] as? Double ?? 3600)
        }
        if behavior["maskSampleSignalIn"] as? String == name {
            // The host's sample signal (61) blocked on the main thread: a watchdog gets no answer.
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, 61)
            pthread_sigmask(SIG_BLOCK, &set, nil)
        }
        if let count = behavior["floodDiagnosticsIn"] as? String == name ? behavior["diagnosticsCount"] as? Int : nil {
            // Garbage on the diagnostics socket (descriptor 4): the host drops it, and stops
            // listening after 16 records.
            let junk = [UInt8](repeating: 0x41, count: 64)
            for _ in 0..<count { _ = junk.withUnsafeBytes { send(4, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } }
        }
        if behavior["spinIn"] as? String == name { spinForever() }
        backgroundSetup(in: name, application)
        continuous.step(name)
        notificationProbes(in: name)
        storageProbes(in: name)
        loggingProbes(in: name)
    }

    private func crash() {
        switch behavior["crash"] as? String ?? "trap" {
        case "segv": raise(SIGSEGV)
        case "exit3": exit(3)
        case "fault": writeThroughABadPointer()
        case "nil": unwrapNothing()
        default: fatalError("Probe crashes on purpose")
        }
    }

    /// A real fault (not a raised signal): a store to an address nothing maps.
    @inline(never)
    private func writeThroughABadPointer() {
        let address = behavior["faultAddress"] as? Int ?? 8
        UnsafeMutablePointer<Int>(bitPattern: address)!.pointee = 42
    }

    @inline(never)
    private func unwrapNothing() {
        let missing: String? = behavior["absent"] as? String
        record("unwrapped \(missing!)")
    }

    /// Hangs the main thread in app code without a system call, for the watchdog's backtrace.
    @inline(never)
    private func spinForever() {
        var spins = 0
        while behavior["neverSet"] == nil { spins &+= 1 }
        record("spun \(spins)")
    }

    private func beginTasks(_ application: Application) {
        let count = behavior["taskCount"] as? Int ?? 1
        for index in 0..<count {
            let identifier = application.beginBackgroundTask(withName: "probe-\(index)") { [weak self] in
                guard let self else { return }
                record("expiration \(Application.shared.applicationState) main=\(Thread.isMainThread) remaining=\(String(format: "%.1f", Application.shared.backgroundTimeRemaining))")
                // A slow handler, which the host's expiration watchdog ends.
                if let seconds = behavior["expirationBlocks"] as? Double { Thread.sleep(forTimeInterval: seconds) }
                if behavior["endTaskOnExpiration"] as? Bool == true {
                    Application.shared.endBackgroundTask(task)
                    task = .invalid
                }
            }
            record("began \(identifier.rawValue)")
            task = identifier
        }
        if let delay = behavior["endTaskAfter"] as? Double {
            let identifier = task
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                Application.shared.endBackgroundTask(identifier)
            }
        }
    }

    func application(
        _ application: Application, willFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        behavior = application.infoDictionary["ProbeBehavior"] as? [String: Any] ?? [:]
        let reason = launchOptions?[.launchReason] as? Application.LaunchReason
        record("launch reason=\(reason?.rawValue ?? "none") remaining=\(application.backgroundTimeRemaining == .greatestFiniteMagnitude ? "max" : "finite")")
        if let payload = launchOptions?[.remoteNotification] as? [AnyHashable: Any] { record("launch payload \(describe(payload))") }
        if behavior["observeNotifications"] as? Bool == true { observeNotifications() }
        record("main bundle \(Bundle.main.bundleIdentifier ?? "nil") \(Bundle.main.infoDictionary?["CFBundleName"] as? String ?? "nil") \(Bundle.main.bundleURL.lastPathComponent)")
        step("willFinishLaunching", application)
        return behavior["willFinishLaunchingReturns"] as? Bool ?? true
    }

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        step("didFinishLaunching", application)
        if behavior["recordDirectories"] as? Bool == true {
            let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first?.path ?? "-"
            record("directories documents=\(documents) home=\(NSHomeDirectory()) tmp=\(NSTemporaryDirectory())")
        }
        if behavior["recordStatus"] as? Bool == true { recordConfinement() }
        if let hold = behavior["hold"] as? [String: Any] { held.take(hold) }
        if let mebibytes = behavior["allocateMiB"] as? Int {
            memoryUse.allocate(mebibytes: mebibytes)
            record("allocated \(mebibytes) MiB")
        }
        if let step = behavior["hogMiB"] as? Int { memoryUse.grow(step: step, every: 0.01, upTo: nil) }
        if let probes = behavior["sandboxProbes"] as? [String] { runSandboxProbes(probes, behavior: behavior) }
        if let threads = behavior["busyThreads"] as? Int { startBusyThreads(threads) }
        if let wire = behavior["wire"] as? String { writeToControlSocket(wire) }
        runWireAttacks(behavior)
        transferProbe = transferSetup(application)
        // A launch that goes on after its transfers began (they may finish while it launches).
        if let seconds = behavior["blockAfterTransfersSeconds"] as? Double { Thread.sleep(forTimeInterval: seconds) }
        if behavior["closeControlSocket"] as? Bool == true { close(3) }
        Window(content: behavior["windowContent"] as? String ?? "Probe").makeKeyAndVisible()
        return behavior["didFinishLaunchingReturns"] as? Bool ?? true
    }

    func applicationDidBecomeActive(_ application: Application) {
        step("didBecomeActive", application)
        if behavior["endInvalidTask"] as? Bool == true {
            application.endBackgroundTask(BackgroundTaskIdentifier(rawValue: 4242))
            application.endBackgroundTask(.invalid)
            record("survived endBackgroundTask")
        }
    }

    func applicationWillResignActive(_ application: Application) {
        step("willResignActive", application)
        if let hidden = behavior["hideOnResign"] as? String { application.windows.forEach { $0.content = hidden } }
    }

    func applicationDidEnterBackground(_ application: Application) {
        step("didEnterBackground", application)
        record("remaining \(String(format: "%.1f", application.backgroundTimeRemaining))")
        if behavior["releaseIn"] as? String == "task" {
            // Released under a background task, which ends once nothing is held.
            let identifier = application.beginBackgroundTask(withName: "release") {}
            let held = self.held
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
                held.release()
                Application.shared.endBackgroundTask(identifier)
            }
        }
    }

    func applicationWillEnterForeground(_ application: Application) { step("willEnterForeground", application) }
    func applicationWillTerminate(_ application: Application) { step("willTerminate", application) }
    func applicationDidReceiveMemoryWarning(_ application: Application) {
        step("didReceiveMemoryWarning", application)
        if behavior["freeOnMemoryWarning"] as? Bool == true {
            memoryUse.free()
            record("freed memory")
        }
    }

    /// Records the process's capability sets, NoNewPrivs and limits, as the kernel reports them.
    private func recordConfinement() {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let fields = status.split(separator: "\n").filter {
            ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"].contains($0.split(separator: ":").first.map(String.init) ?? "")
        }
        record("status " + fields.map { $0.replacingOccurrences(of: ":\t", with: "=") }.joined(separator: " "))
        var core = rlimit()
        var files = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &core)
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        record("limits core=\(core.rlim_cur) nofile=\(files.rlim_cur)")
    }

    /// Threads that spin and publish their progress to Documents/progress.
    private func startBusyThreads(_ count: Int) {
        let progress = Application.shared.containerURL.appendingPathComponent("Documents/progress").path
        let counter = Atomic<Int>(0)
        for index in 0..<count {
            Thread.detachNewThread {
                let fd = index == 0 ? open(progress, O_WRONLY | O_CREAT | O_TRUNC, 0o644) : -1
                var iterations = 0
                while true {
                    iterations &+= 1
                    if iterations % 200_000 == 0 {
                        let total = counter.add(1, ordering: .relaxed).newValue
                        if fd >= 0 {
                            let text = String(total).padding(toLength: 20, withPad: " ", startingAt: 0)
                            _ = text.withCString { pwrite(fd, $0, 20, 0) }
                        }
                    }
                }
            }
        }
        record("busy \(count)")
    }

    /// Misbehaves on the wire: the host must treat it as a failed app, not fail itself.
    private func writeToControlSocket(_ kind: String) {
        var bytes: [UInt8]
        switch kind {
        case "oversize":
            bytes = withUnsafeBytes(of: UInt64(1 << 40).littleEndian, Array.init) + Array("{}".utf8)
        default:
            let body = Array("this is not JSON at all".utf8)
            bytes = withUnsafeBytes(of: UInt64(body.count).littleEndian, Array.init) + body
        }
        _ = bytes.withUnsafeBytes { write(3, $0.baseAddress, $0.count) }
    }
}
