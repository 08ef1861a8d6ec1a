#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import AppHostProtocol
import AppHostSystem
@_implementationOnly import CAppHostEpoll
@_implementationOnly import CAppHostKitRecord
@_implementationOnly import CAppHostShims
import Logging

/// The plugin's C entry point, called by the app process's runner once the plugin is loaded and
/// its ABI record checked. Apps never call it: like `UIApplicationMain`, it creates the delegate
/// named in Info.plist and runs the main queue forever.
///
/// `arguments` points to a `struct apphost_entry_arguments` (apphost_plugin.h). Returns only if
/// the arguments are unusable.
@_cdecl("apphost_plugin_main")
public func _apphostPluginMain(_ arguments: UnsafeRawPointer) -> Int32 {
    let arguments = arguments.assumingMemoryBound(to: apphost_entry_arguments.self).pointee
    guard arguments.abi_version == APPHOST_PLUGIN_ABI_VERSION, let bytes = arguments.configuration else {
        writeStandardError("AppHostKit: incompatible entry arguments\n")
        return 2
    }
    let configuration: WireConfiguration
    do {
        configuration = try WireConfiguration(compact: ArraySlice(UnsafeBufferPointer(start: bytes, count: Int(arguments.configuration_length))))
    } catch {
        writeStandardError("AppHostKit: unreadable configuration: \(error)\n")
        return 2
    }
    // The app's output goes to the host through a pipe: line-buffer it, so a line printed just
    // before a kill is not lost in a buffer.
    apphost_line_buffer_stdout()
    // The delegate's look-ups search the plugin's own image (the SDK may be a library of its own).
    apphost_set_plugin_image(strdup(configuration.pluginPath))
    // Before any app code: UserDefaults.standard is Library/Preferences/BUNDLE-ID.plist.
    takeTheAppsIdentity(bundleIdentifier: configuration.bundleIdentifier, pluginPath: configuration.pluginPath)
    let controlFD = arguments.control_fd
    hostLink.start(socket: ControlChannel(fd: controlFD), configuration: configuration)
    // Before any app code: every Logger the app makes sends its records to the host.
    LoggingSystem.bootstrap(AppHostLogHandler.init)
    MainActor.assumeIsolated {
        AppMain.start(configuration: configuration, controlFD: controlFD)
    }
    // The main run loop drains the main queue on the main thread, as on iOS. (dispatchMain() on
    // Linux would end the main thread and drain the main queue on a worker thread instead.)
    // A timer that never fires keeps the run loop from returning for want of sources.
    RunLoop.main.add(Timer(timeInterval: .greatestFiniteMagnitude, repeats: false) { _ in }, forMode: .default)
    while true {
        _ = RunLoop.main.run(mode: .default, before: .distantFuture)
    }
}

/// Called once by the launch template, single-threaded, when it has loaded the SDK as a library
/// of its own (docs/launching.md, "How apps are launched"): what every app process's SDK does first that
/// no app decides, done so that each fork finds it done — the decoding of a configuration with
/// every part, the host messages' and the SDK's replies' coding, the launch options' types. It
/// starts no thread, opens nothing, and makes nothing of an app's (no `Application`).
@_cdecl("apphost_sdk_warm_up")
public func _apphostSDKWarmUp() {
    let configuration = WireConfiguration.everyPart
    _ = try? WireConfiguration(compact: configuration.compactBytes[...])
    for message in [HostMessage.configure(configuration), .withdraw(id: 1)] {
        _ = try? WireCoding.decode(HostMessage.self, from: WireCoding.encode(message))
    }
    for message in [AppMessage.ready(protocolVersion: wireProtocolVersion), .ack(id: 1, returned: true, snapshot: nil), .ackThenNext(id: 1)] {
        _ = WireCoding.encode(message)
    }
    let options: [Application.LaunchOptionsKey: Any] = [.launchReason: Application.LaunchReason(rawValue: "user"), .remoteNotification: [AnyHashable: Any]()]
    _ = options.count
}

/// The type Info.plist names (`Module.Class`): looked up among the plugin's own classes first,
/// where an app's delegates are (apphost_types.h), else by `_typeByName`, which scans the types
/// of every loaded image (0.1 ms more of each launch, measured).
func typeNamed(_ name: String) -> Any.Type? {
    apphost_own_class_metadata(name).map { unsafeBitCast($0, to: Any.Type.self) } ?? _typeByName(name)
}

/// `type` as `Metatype`, the metatype of a class-bound protocol's existential (`any P.Type`),
/// from the conformance to `P` (named `protocolName`, `Module.P`) that the plugin declares of it
/// (apphost_types.h); nil if it declares none, and the caller casts.
func ownConformance<Metatype>(of type: Any.Type, to protocolName: String, as _: Metatype.Type) -> Metatype? {
    let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    // Such a metatype is the type's metadata, then the conformance's witness table.
    guard MemoryLayout<Metatype>.size == 2 * MemoryLayout<UnsafeRawPointer>.size,
          let witnesses = apphost_own_conformance(metadata, protocolName) else { return nil }
    return unsafeBitCast((metadata, witnesses), to: Metatype.self)
}

/// The delegate protocols as the plugin's conformance records name them.
enum DelegateProtocolName {
    static let application = "AppHostKit.ApplicationDelegate"
    static let scene = "AppHostKit.SceneDelegate"
}

/// The app process's main loop: runs the host's messages on the main queue, as its reader
/// thread hands them over.
@MainActor
enum AppMain {
    private static var launchOptions: [Application.LaunchOptionsKey: Any] = [:]
    /// The launch's didBecomeActive, when the configuration carries it: it runs right after
    /// didFinishLaunching has returned true, unless the host has withdrawn it by then.
    private static var configuredActivation: WireCallbackRequest?
    /// Its id while it may still be withdrawn, then 0. The main thread (didFinishLaunching has
    /// returned) and the reader thread (the host's `withdraw`) each try to take it: the first
    /// decides, and the acknowledgement of didFinishLaunching tells the host which did.
    nonisolated private static let withdrawable = Atomic<UInt64>(0)

    static func start(configuration: WireConfiguration, controlFD: Int32) {
        let application = Application.hosted
        let className = configuration.delegateClassName
        // The bundle by its directory (its CFBundleName may differ), and the class's module by
        // the plugin's library: libNotesExample.so holds module NotesExample.
        let bundle = configuration.bundlePath.split(separator: "/").last.map(String.init) ?? "\(configuration.bundleName).app"
        let library = configuration.pluginPath.split(separator: "/").last.map(String.init) ?? ""
        let module = library.hasPrefix("lib") && library.hasSuffix(".so") ? String(library.dropFirst(3).dropLast(3)) : configuration.bundleName
        guard let type = typeNamed(className) else {
            fail(
                "\(bundle)/Info.plist: ApplicationDelegateClassName names \(className), "
                    + "which does not exist in the plugin; name the class as Module.ClassName, e.g. \(module).AppDelegate"
            )
        }
        // AppHostKit's delegates by the plugin's own record (fast); UIKit's by a cast.
        let required = ownConformance(of: type, to: DelegateProtocolName.application, as: (any ApplicationDelegate.Type).self)
        guard let delegateType = required ?? type as? any ApplicationDelegateCallbacks.Type else {
            fail(
                "\(bundle)/Info.plist: ApplicationDelegateClassName names \(className), "
                    + "which does not conform to ApplicationDelegate (or UIKit's UIApplicationDelegate)"
            )
        }
        launchOptions = [.launchReason: Application.LaunchReason(rawValue: configuration.launchReason)]
        if let payload = configuration.launchPayload { launchOptions[.remoteNotification] = notificationPayload(payload) }
        UNUserNotificationCenter.current().deliveredChanged(configuration.deliveredNotifications ?? [])
        // As UIKit marks a relaunch for a significant location change.
        if configuration.launchReason == Application.LaunchReason.location.rawValue { launchOptions[.location] = true }
        if let manifest = configuration.scenes {
            application.scenes = SceneDriver(manifest: manifest, link: hostLink, sessions: configuration.sceneSessions ?? [])
        }
        guard let delegate = required.map({ $0.init() }) ?? ClassInstantiation.make(delegateType) as? any ApplicationDelegateCallbacks else {
            fail(
                "\(bundle)/Info.plist: ApplicationDelegateClassName names \(className), which apphost cannot create: "
                    + "subclass UIResponder or NSObject (as iOS requires of a UIApplicationDelegate), or conform to ApplicationDelegate"
            )
        }
        application.delegate = delegate

        // The launch's callbacks came with the configuration: they run from the main queue, as
        // the host's messages do, once `start` has sent `ready` and returned, ahead of anything
        // the host sends after.
        let launch = configuration.launchCallbacks ?? []
        if let activation = launch.last, activation.callback == .didBecomeActive {
            configuredActivation = activation
            withdrawable.store(activation.id, ordering: .releasing)
        }
        runLaunchCallbacks(launch.filter { $0.callback != .didBecomeActive })
        HostMessageReader(fd: controlFD).start(
            withdraw: { id in _ = withdrawable.compareExchange(expected: id, desired: 0, ordering: .acquiringAndReleasing) },
            deliver: { message in DispatchQueue.main.async { MainActor.assumeIsolated { handle(message) } } })
        hostLink.send(.ready(protocolVersion: wireProtocolVersion))
    }

    /// Runs `requests` one after the other, each from the main queue once the one before has
    /// returned (as it would when the host sent it on that one's acknowledgement), and none after
    /// a launching method that returned false: that ends the launch.
    private static func runLaunchCallbacks(_ requests: [WireCallbackRequest]) {
        guard let request = requests.first else { return }
        DispatchQueue.main.async {
            MainActor.assumeIsolated {
                if run(request) != false { runLaunchCallbacks(Array(requests.dropFirst())) }
            }
        }
    }

    /// Tells the host why the app cannot start, then ends the process.
    static func fail(_ reason: String) -> Never {
        hostLink.send(.launchFailed(reason: reason))
        _exit(78)
    }

    private static func handle(_ message: HostMessage) {
        switch message {
        case .callback(let request):
            run(request)
        case .expire(let taskIDs, let remaining):
            // The host's watchdog times the handlers, which run here, on the main thread.
            hostLink.send(.expirationHandlers(taskIDs: taskIDs, returned: false))
            Application.hosted.expire(taskIDs: taskIDs, remaining: remaining)
            hostLink.send(.expirationHandlers(taskIDs: taskIDs, returned: true))
        case .expireWork(let work):
            Application.hosted.scheduler.expire(work: work)
        case .audioInterruption(let began):
            AVAudioSession.sharedInstance().interruption(began: began)
        case .location(let location):
            _ = CLLocationManager.deliver(location)
        case .locationFailed(let code):
            CLLocationManager.fail(code: code)
        case .locationAuthorization(let status):
            CLLocationManager.authorizationChanged(status)
        case .notification(let tell):
            switch tell {
            case .authorization(let status): UNUserNotificationCenter.current().authorizationChanged(status)
            case .present(let request): UNUserNotificationCenter.current().present(request)
            case .respond(let request, let action, let userText): UNUserNotificationCenter.current().respond(request, action: action, userText: userText)
            case .delivered(let delivered): UNUserNotificationCenter.current().deliveredChanged(delivered)
            case .deviceToken(let token): Application.hosted.registered(deviceToken: token)
            }
        case .transferFinished(let event):
            urlSessionRegistry.received([event], batch: nil)
        case .transferProgress(let session, let task, let received, let sent, let expected, let resumedAt):
            urlSessionRegistry.progress(session: session, task: task, received: received, sent: sent, expected: expected, resumedAt: resumedAt)
        case .configure:
            writeStandardError("AppHostKit: unexpected configure message\n")
            _exit(70)
        case .withdraw:
            break  // taken on the reader thread
        }
    }

    /// A fetch or notification completion handler: tells the host the work is done, once.
    private static func completion(_ event: WireBackgroundEvent?) -> @Sendable (Application.BackgroundFetchResult) -> Void {
        fetchCompletion(work: event?.work ?? 0, notification: event?.kind == .remoteNotification, link: hostLink)
    }

    /// A notification's JSON payload as UIKit hands it over: `[AnyHashable: Any]`.
    private static func notificationPayload(_ json: String) -> [AnyHashable: Any] {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8))
        return (object as? [String: Any]).map { Dictionary(uniqueKeysWithValues: $0.map { (AnyHashable($0.key), $0.value) }) } ?? [:]
    }

    /// Runs the callback, tells the host it returned, and returns what it returned.
    @discardableResult
    private static func run(_ request: WireCallbackRequest) -> Bool? {
        let application = Application.hosted
        application.applicationState = Application.State(rawValue: request.state.rawValue) ?? .inactive
        switch request.callback {
        case .didEnterBackground: application.enterBackground(remaining: request.backgroundTimeRemaining)
        case .willEnterForeground: application.enterForeground()
        default: break
        }
        var returned: Bool?
        var snapshot: String?
        // An app with scenes: its scenes stand in for the app delegate's foreground and background methods.
        if let delegate = application.delegate, application.scenes?.run(request.callback, target: request.scene, application, delegate) != true {
            switch request.callback {
            case .willFinishLaunching:
                returned = delegate.application(application, willFinishLaunchingWithOptions: launchOptions)
            case .didFinishLaunching:
                returned = delegate.application(application, didFinishLaunchingWithOptions: launchOptions)
                if returned != false { application.scenes?.launchFinished(application, delegate) }
            case .didBecomeActive: delegate.applicationDidBecomeActive(application)
            case .willResignActive: delegate.applicationWillResignActive(application)
            case .didEnterBackground: delegate.applicationDidEnterBackground(application)
            case .willEnterForeground: delegate.applicationWillEnterForeground(application)
            case .willTerminate: delegate.applicationWillTerminate(application)
            case .didReceiveMemoryWarning: delegate.applicationDidReceiveMemoryWarning(application)
            case .performFetch:
                delegate.application(application, performFetchWithCompletionHandler: completion(request.event))
            case .didReceiveRemoteNotification:
                delegate.application(
                    application, didReceiveRemoteNotification: notificationPayload(request.event?.payload ?? "{}"),
                    fetchCompletionHandler: completion(request.event))
            case .launchTask:
                if let event = request.event, application.scheduler.launch(event, for: application) == nil {
                    hostLink.warn("no launch handler is registered for task \(event.taskIdentifier ?? "?"); it ends unrun")
                    hostLink.send(.workCompleted(id: event.work, result: "failure"))
                }
            case .didReceiveIncomingPush:
                if !PKPushRegistry.deliver(payload: request.event?.payload ?? "{}") {
                    hostLink.warn("a VoIP push came, but no PKPushRegistry with desiredPushTypes [.voIP] has a delegate; nothing reports a call")
                }
            case .didUpdateLocations:
                let location = (request.event?.payload).flatMap { try? WireCoding.decode(WireLocation.self, from: Array($0.utf8)) }
                if location.map({ CLLocationManager.deliver($0, significantOnly: true) }) != true {
                    hostLink.warn("a significant location change came, but no CLLocationManager monitors significant changes; start monitoring while launching")
                }
            case .handleEventsForBackgroundURLSession:
                urlSessionRegistry.handleEvents(request.event, application, delegate)
            case .snapshot: snapshot = application.snapshot()
            case .connectScene, .disconnectScene, .discardScene:
                hostLink.warn("the host sent \(request.callback.rawValue), but the app does not adopt scenes; nothing was called")
            }
        }
        // What a scene callback changed in the sessions reaches the host before the callback ends.
        application.scenes?.report()
        // A failed launch ends the app: nothing observes it as launched.
        if returned != false { application.postNotification(after: request.callback, launchOptions: launchOptions) }
        // iOS writes the app's defaults out before it can be suspended or ended; Foundation on
        // Linux only when asked.
        if request.callback == .didEnterBackground || request.callback == .willTerminate { UserDefaults.standard.synchronize() }
        if request.callback == .didFinishLaunching { application.scheduler.launchFinished.store(true, ordering: .releasing) }
        if let after = request.stateAfter {
            application.applicationState = Application.State(rawValue: after.rawValue) ?? application.applicationState
        }
        if request.callback == .didFinishLaunching, returned == true, let next = configuredActivation,
           withdrawable.compareExchange(expected: next.id, desired: 0, ordering: .acquiringAndReleasing).exchanged {
            configuredActivation = nil
            hostLink.send(.ackThenNext(id: request.id))
            // From the main queue, as the host's request would have run: after what the app queued.
            DispatchQueue.main.async { MainActor.assumeIsolated { _ = run(next) } }
        } else {
            hostLink.send(.ack(id: request.id, returned: returned, snapshot: snapshot))
        }
        return returned
    }
}

/// A fetch or notification completion handler: tells the host (through `link`) that the work is
/// done, once; a second call is a warning.
func fetchCompletion(work: UInt64, notification: Bool, link: HostLink) -> @Sendable (Application.BackgroundFetchResult) -> Void {
    let called = Atomic<Bool>(false)
    let method = notification
        ? "application(_:didReceiveRemoteNotification:fetchCompletionHandler:)" : "application(_:performFetchWithCompletionHandler:)"
    return { result in
        guard !called.exchange(true, ordering: .acquiringAndReleasing) else {
            link.warn("the completion handler of \(method) was called twice; ignoring the second call")
            return
        }
        link.send(.workCompleted(id: work, result: result.name))
    }
}
