//
//  AppDelegate.swift
//  Notebook
//

import UIKit
import BackgroundTasks

@main
class AppDelegate: UIResponder, UIApplicationDelegate {

    static let cleanupIdentifier = "com.example.notebook.cleanup"

    override init() {
        super.init()
        print("Notebook delegate created")
    }

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.cleanupIdentifier, using: .main) { task in
            MainActor.assumeIsolated {
                self.cleanUp(task as! BGProcessingTask)
            }
        }
        return true
    }

    func cleanUp(_ task: BGProcessingTask) {
        task.expirationHandler = { print("Notebook cleanup expired") }
        print("Notebook cleaned up")
        task.setTaskCompleted(success: true)
    }

    // MARK: UISceneSession Lifecycle

    func application(_ application: UIApplication, configurationForConnecting connectingSceneSession: UISceneSession, options: UIScene.ConnectionOptions) -> UISceneConfiguration {
        return UISceneConfiguration(name: "Default Configuration", sessionRole: connectingSceneSession.role)
    }

    func application(_ application: UIApplication, didDiscardSceneSessions sceneSessions: Set<UISceneSession>) {
    }
}
