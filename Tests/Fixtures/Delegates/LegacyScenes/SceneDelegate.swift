//
//  SceneDelegate.swift
//  Gallery
//

import UIKit

class SceneDelegate: UIResponder, UIWindowSceneDelegate {

    var window: UIWindow?
    private var opened = 0

    override init() {
        super.init()
    }

    func scene(_ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions) {
        guard let windowScene = (scene as? UIWindowScene) else { return }
        window = UIWindow(windowScene: windowScene)
        window?.rootViewController = UINavigationController(rootViewController: AlbumsViewController())
        window?.backgroundColor = .black
        window?.makeKeyAndVisible()
    }

    func sceneWillEnterForeground(_ scene: UIScene) {
        opened += 1
    }

    func sceneDidEnterBackground(_ scene: UIScene) {
        print("Gallery scene in the background after \(opened) visit(s)")
    }
}

class AlbumsViewController: UIViewController {
    override func viewDidLoad() {
        super.viewDidLoad()
        title = "Albums"
    }
}
