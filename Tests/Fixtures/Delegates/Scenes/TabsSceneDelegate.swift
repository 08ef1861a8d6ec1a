//
//  TabsSceneDelegate.swift
//  Notebook
//
//  A second scene configuration: a plain view controller, presented over by a settings screen.
//

import UIKit

class TabsSceneDelegate: UIResponder, UIWindowSceneDelegate {

    var window: UIWindow?

    func scene(_ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions) {
        guard let windowScene = scene as? UIWindowScene else { return }
        window = UIWindow(windowScene: windowScene)
        let root = UIViewController()
        root.title = "Home"
        window?.rootViewController = root
        window?.makeKeyAndVisible()
        root.present(UINavigationController(rootViewController: UIViewController()), animated: false)
    }

    func sceneWillResignActive(_ scene: UIScene) {
        window?.rootViewController?.dismiss(animated: false)
    }
}
