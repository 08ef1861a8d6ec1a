import AppHostKit

/// The smallest app: it says hello when it becomes active and goodbye when it is terminated.
final class AppDelegate: ApplicationDelegate {
    let window = Window(content: "Hello, world!")

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        window.makeKeyAndVisible()
        print("Hello launched (\(launchOptions?[.launchReason] ?? "unknown reason"))")
        return true
    }

    func applicationDidBecomeActive(_ application: Application) {
        print("Hello, world! (state \(application.applicationState))")
    }

    func applicationWillTerminate(_ application: Application) {
        print("Goodbye.")
    }
}
