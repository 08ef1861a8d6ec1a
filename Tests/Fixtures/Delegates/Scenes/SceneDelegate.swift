//
//  SceneDelegate.swift
//  Notebook
//
//  A storyboard-free scene delegate: the window and its root view controller made in code.
//

import UIKit
import BackgroundTasks

class SceneDelegate: UIResponder, UIWindowSceneDelegate {

    var window: UIWindow?

    func scene(_ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions) {
        guard let windowScene = (scene as? UIWindowScene) else { return }
        let window = UIWindow(windowScene: windowScene)
        let notes = NotesViewController()
        notes.title = "Notes"
        window.rootViewController = UINavigationController(rootViewController: notes)
        window.tintColor = .systemBlue
        self.window = window
        window.makeKeyAndVisible()
    }

    func sceneDidBecomeActive(_ scene: UIScene) {
        print("Notebook scene active, root \(String(describing: type(of: window?.rootViewController)))")
    }

    func sceneDidEnterBackground(_ scene: UIScene) {
        let request = BGProcessingTaskRequest(identifier: AppDelegate.cleanupIdentifier)
        request.requiresExternalPower = false
        request.requiresNetworkConnectivity = false
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            print("Could not schedule cleanup: \(error)")
        }
    }
}

final class NotesViewController: UIViewController {
    override func viewDidLoad() {
        super.viewDidLoad()
        view.backgroundColor = UIColor(red: 1, green: 0.98, blue: 0.9, alpha: 1)
    }
}
