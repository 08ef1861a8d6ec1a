#if canImport(Glibc)
import Glibc
#endif

// On iOS `UserDefaults.standard` is the app's own domain, stored as
// Library/Preferences/BUNDLE-ID.plist in its container. Foundation on Linux names the standard
// domain after the main bundle's identifier, else the process's name (CFPreferences.c,
// kCFPreferencesCurrentApplication): in an app process the main bundle is apphost's own
// executable, which has no identifier, so the domain would be "apphost". The directory is
// right already (the host points XDG_CONFIG_HOME at Library/Preferences).

/// Makes Foundation's process name — and with it the standard defaults domain — the app's
/// bundle identifier. Call before any app code runs: CoreFoundation caches the name the first
/// time preferences use it. Does nothing if this Foundation lacks the (exported, undocumented)
/// `_CFGetProgname` / `_CFProcessPath`, leaving the domain "apphost".
func nameStandardDefaultsDomain(_ bundleIdentifier: String) {
    guard !bundleIdentifier.isEmpty,
          let processPath = dlsym(nil, "_CFProcessPath"), let progname = dlsym(nil, "_CFGetProgname")
    else { return }
    // The process path is computed once, and computing it sets the name: do it first, so that
    // it never overwrites ours later.
    _ = unsafeBitCast(processPath, to: (@convention(c) () -> UnsafePointer<CChar>?).self)()
    let name = unsafeBitCast(progname, to: (@convention(c) () -> UnsafeMutablePointer<UnsafePointer<CChar>?>?).self)()
    // Never freed: CoreFoundation keeps the pointer for the life of the process.
    name?.pointee = UnsafePointer(strdup(bundleIdentifier))
}
