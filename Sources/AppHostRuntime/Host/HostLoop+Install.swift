import Foundation

// Installing apps: what a host checks of a bundle before it knows the app, and what it gives it.
extension HostLoop {
    /// Makes an app known to the host. It does not launch it.
    func install(_ bundle: AppBundle) throws {
        try queue.sync {
            for name in bundle.capabilities where !configuration.policy.allowedCapabilities.contains(name) {
                throw SupervisorError(
                    "\(bundle.url.lastPathComponent) asks for \(name), which this host's policy does not allow; "
                        + "allow it with --allow-capability \(name) or the policy's allowedCapabilities", code: .invalidBundle)
            }
            if storage.hasAppUsers, let reason = AppUsers.unreachableReason(bundle.pluginURL.resolvingSymlinksInPath().path) {
                throw SupervisorError(
                    "\(bundle.url.lastPathComponent) cannot be loaded by its app user: \(reason); "
                        + "move the bundle where every user can read it", code: .invalidBundle)
            }
            _ = try apps.install(bundle)
            if bundle.nameIsDirectoryName {
                publish(HostEvent(
                    time: Date(), app: bundle.identifier, name: bundle.name, event: .warning,
                    detail: "\(bundle.url.lastPathComponent)/Info.plist has no CFBundleName: the app is named \(bundle.name) after its directory"), run: nil)
            }
            storage.reserveUser(for: bundle)
            queueSchedulerPass()
            queueTransferPass()
            // Its kept notifications (of an earlier host) may be due, or due later.
            post(.pass(.notifications))
        }
    }

    /// The installed apps' bundles, in installation order.
    var bundles: [AppBundle] { queue.sync { apps.map(\.bundle) } }
}
