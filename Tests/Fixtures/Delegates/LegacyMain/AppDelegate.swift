//
//  AppDelegate.swift
//  Recipes
//
//  A pre-scenes app delegate, as projects started before iOS 13 keep it: @UIApplicationMain,
//  a window made in code with a navigation controller, a background refresh.
//

import UIKit
import BackgroundTasks

@UIApplicationMain
class AppDelegate: UIResponder, UIApplicationDelegate {

    var window: UIWindow?
    let refreshIdentifier = "com.example.recipes.refresh"

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        if launchOptions?[UIApplication.LaunchOptionsKey.location] != nil {
            print("Recipes relaunched for a location change")
        }

        window = UIWindow(frame: UIScreen.main.bounds)
        let navigationController = UINavigationController(rootViewController: RecipeListViewController())
        window?.rootViewController = navigationController
        window?.backgroundColor = UIColor.white
        window?.makeKeyAndVisible()

        BGTaskScheduler.shared.register(forTaskWithIdentifier: refreshIdentifier, using: nil) { task in
            self.handleAppRefresh(task: task as! BGAppRefreshTask)
        }

        let launches = (UserDefaults.standard.value(forKey: "launchCount") as? Int ?? 0) + 1
        UserDefaults.standard.setValue(launches, forKey: "launchCount")
        print("Recipes launched \(launches) time(s), root \(type(of: window!.rootViewController!))")
        let name = Bundle.main.object(forInfoDictionaryKey: "CFBundleName") as? String ?? "?"
        let plist = Bundle.main.url(forResource: "Info", withExtension: "plist")?.lastPathComponent ?? "none"
        print("Bundle \(Bundle.main.bundleIdentifier ?? "?") \(name) \(Bundle.main.infoDictionary?["BGTaskSchedulerPermittedIdentifiers"] != nil) \(plist)")
        return true
    }

    func applicationWillResignActive(_ application: UIApplication) {
        // Pause ongoing tasks.
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        scheduleAppRefresh()
    }

    func applicationWillEnterForeground(_ application: UIApplication) {
    }

    func applicationDidBecomeActive(_ application: UIApplication) {
        print("Recipes active, screen \(Int(UIScreen.main.bounds.width))x\(Int(UIScreen.main.bounds.height))")
    }

    func applicationWillTerminate(_ application: UIApplication) {
        print("Recipes will terminate")
    }

    // MARK: - Background refresh

    func scheduleAppRefresh() {
        let request = BGAppRefreshTaskRequest(identifier: refreshIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch let error as BGTaskScheduler.Error {
            switch error.code {
            case .notPermitted: print("Refresh not permitted (\(error.errorCode))")
            case .tooManyPendingTaskRequests: print("Refresh already pending (\(error.errorCode))")
            case .unavailable: print("Background refresh unavailable (\(error.errorCode))")
            @unknown default: print("Could not schedule app refresh: \(error)")
            }
        } catch {
            print("Could not schedule app refresh: \(error)")
        }
    }

    func handleAppRefresh(task: BGAppRefreshTask) {
        scheduleAppRefresh()
        task.expirationHandler = {
            print("Recipes refresh expired")
        }
        print("Recipes refreshed")
        task.setTaskCompleted(success: true)
    }
}
