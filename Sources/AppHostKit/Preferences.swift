#if canImport(Glibc)
import Glibc
#endif

// On iOS `UserDefaults.standard` is the app's own domain, stored as
// Library/Preferences/BUNDLE-ID.plist in its container. Foundation on Linux names the standard
// domain after the main bundle's identifier, else the process's name (CFPreferences.c,
// kCFPreferencesCurrentApplication): in an app process the main bundle is apphost's own
// executable, which has no identifier, so the domain would be "apphost". The directory is
// right already (the host points XDG_CONFIG_HOME at Library/Preferences).

/// Makes the app process look like the app to Foundation, as on iOS: `Bundle.main` is the app's
/// bundle (its Info.plist, `bundleIdentifier`, `executablePath`: the plugin), and the process
/// name — and with it the standard defaults domain — is the app's bundle identifier. Call before
/// any app code runs: CoreFoundation computes both once and caches them (the runner never
/// touches `Bundle.main`). Does nothing if this Foundation lacks the (exported, undocumented)
/// `_CFProcessPath` / `_CFGetProcessPath` / `_CFGetProgname`, leaving apphost's own.
func takeTheAppsIdentity(bundleIdentifier: String, pluginPath: String) {
    guard !bundleIdentifier.isEmpty,
          let processPath = dlsym(nil, "_CFProcessPath"), let progname = dlsym(nil, "_CFGetProgname")
    else { return }
    // The process path is computed once, and computing it sets the name: do it first, so that
    // it never overwrites ours later.
    _ = unsafeBitCast(processPath, to: (@convention(c) () -> UnsafePointer<CChar>?).self)()
    // The main bundle is found from the process path: the plugin's, inside Name.app.
    if !pluginPath.isEmpty, let slot = dlsym(nil, "_CFGetProcessPath") {
        let path = unsafeBitCast(slot, to: (@convention(c) () -> UnsafeMutablePointer<UnsafePointer<CChar>?>?).self)()
        // Never freed, like the name below.
        path?.pointee = UnsafePointer(strdup(pluginPath))
    }
    let name = unsafeBitCast(progname, to: (@convention(c) () -> UnsafeMutablePointer<UnsafePointer<CChar>?>?).self)()
    // Never freed: CoreFoundation keeps the pointer for the life of the process.
    name?.pointee = UnsafePointer(strdup(bundleIdentifier))
}
