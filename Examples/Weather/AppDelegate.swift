import AppHostKit
import Foundation
import Synchronization

/// Keeps a forecast fresh with a BGAppRefreshTask, the way an iOS weather app does:
/// - it registers the refresh task's launch handler while launching, the only time it may;
/// - whenever it leaves the foreground it asks for a refresh an hour later;
/// - the refresh runs in the background, often in a process launched just for it: it fetches
///   the forecast, stores it in Documents/forecast.json, shows it, asks for the next refresh and
///   completes the task; the host then takes a new snapshot and suspends the app;
/// - if the host ends the task early, the expiration handler cancels the fetch and the task
///   completes unsuccessfully, so the app is suspended rather than killed (0x2182bad4).
///
/// Try it: `apphost launch Weather.app`, then `home`, `tasks`, `advance 3600` (or
/// `run-task Weather com.example.weather.refresh` to run it at once).
final class AppDelegate: ApplicationDelegate {
    static let refreshIdentifier = "com.example.weather.refresh"
    private let window = Window(content: "Weather: no forecast yet")

    func application(
        _ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.refreshIdentifier, using: .main) { [weak self] task in
            // Registered on the main queue, so the handler runs on the main actor.
            MainActor.assumeIsolated { self?.refresh(task) }
        }
        if let saved = Forecast.load() { show(saved) }
        window.makeKeyAndVisible()
        return true
    }

    func applicationDidEnterBackground(_ application: Application) {
        scheduleRefresh()
    }

    private func scheduleRefresh() {
        let request = BGAppRefreshTaskRequest(identifier: Self.refreshIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 3600)
        do {
            // Submitting again replaces the pending request: there is only ever one.
            try BGTaskScheduler.shared.submit(request)
        } catch {
            print("Weather: cannot schedule a refresh: \(error)")
        }
    }

    private func refresh(_ task: BGTask) {
        scheduleRefresh()
        let fetch = ForecastService.fetch(city: "Oslo") { [weak self] forecast in
            MainActor.assumeIsolated {
                guard let forecast else {
                    task.setTaskCompleted(success: false)
                    return
                }
                forecast.save()
                self?.show(forecast)
                print("Weather: refreshed in the background: \(forecast.line)")
                task.setTaskCompleted(success: true)
            }
        }
        task.expirationHandler = {
            print("Weather: the refresh ran out of time; cancelling it")
            fetch.cancel()
        }
    }

    private func show(_ forecast: Forecast) {
        window.content = "Weather: \(forecast.line)"
    }
}

/// One city's forecast, as stored in Documents/forecast.json.
struct Forecast: Codable, Sendable {
    var city: String
    var celsius: Int
    var summary: String
    var updated: Date

    var line: String {
        let time = updated.formatted(.dateTime.hour(.twoDigits(amPM: .abbreviated)).minute(.twoDigits))
        return "\(city) \(celsius)°C, \(summary) (updated \(time))"
    }

    private static let url = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
        .appendingPathComponent("forecast.json")

    static func load() -> Forecast? {
        (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Forecast.self, from: $0) }
    }

    func save() {
        // Atomic: a suspension or a kill mid-write never leaves half a forecast.
        try? JSONEncoder().encode(self).write(to: Self.url, options: .atomic)
    }
}

/// Where forecasts come from. apphost's default sandbox gives an app no network, so this stands
/// in for the URLSession request a real app makes: it answers after a short delay, with weather
/// that depends on the hour, and it can be cancelled like a request.
enum ForecastService {
    final class Request: Sendable {
        private let cancelled = Atomic<Bool>(false)
        var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
        func cancel() { cancelled.store(true, ordering: .releasing) }
    }

    /// Calls `completion` on the main queue with the forecast, or nil if cancelled.
    static func fetch(city: String, completion: @escaping @Sendable (Forecast?) -> Void) -> Request {
        let request = Request()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
            let hour = Calendar.current.component(.hour, from: Date())
            let forecast = Forecast(
                city: city, celsius: 2 + hour % 9, summary: ["rain", "clouds", "sun"][hour % 3], updated: Date())
            DispatchQueue.main.async { completion(request.isCancelled ? nil : forecast) }
        }
        return request
    }
}
