//
//  AppDelegate.swift
//  Radio
//
//  An audio app's delegate: the session set up at launch, logged with os_log.
//

import UIKit
import AVFoundation
import os.log

@main
class AppDelegate: UIResponder, UIApplicationDelegate {

    var window: UIWindow?
    static let log = OSLog(subsystem: "com.example.radio", category: "app")

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        do {
            try AVAudioSession.sharedInstance().setCategory(.playback, mode: .default, options: [.allowAirPlay])
            try AVAudioSession.sharedInstance().setActive(true)
        } catch {
            os_log("Failed to set up the audio session: %@", log: AppDelegate.log, type: .error, error.localizedDescription)
        }
        os_log("Radio launched, category %{public}@", log: AppDelegate.log, type: .info, AVAudioSession.sharedInstance().category.rawValue)
        return true
    }

    func applicationDidEnterBackground(_ application: UIApplication) {
        os_log("Radio in the background", log: AppDelegate.log, type: .info)
    }

    func applicationWillTerminate(_ application: UIApplication) {
        try? AVAudioSession.sharedInstance().setActive(false, options: .notifyOthersOnDeactivation)
    }
}
