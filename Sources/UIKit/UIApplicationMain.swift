#if canImport(Glibc)
import Glibc
#endif
import Foundation

// `@UIApplicationMain` on Linux. The compiler synthesizes, for the class it marks:
//
//     int main(int argc, char **argv) {
//         return UIApplicationMain(argc, argv, nil, NSStringFromClass(AppDelegate.self)); }
//
// looking `UIApplicationMain` up in the *Clang* module named UIKit (swift-frontend crashes in
// SILGen without one: AppleModuleMaps declares it) and calling `NSStringFromClass` as a C function
// that takes the class (on Linux, its metadata) and returns an autoreleased NSString, which it
// retains and releases. Both are defined here. As with `@main`, the host never calls an app's
// `main`: an app is a plugin, and the host creates the delegate that Info.plist names.

/// The class's name (`Module.Class`) as an NSString, +0: kept alive here, as an autorelease pool
/// would keep it until `main` returns.
@_cdecl("NSStringFromClass")
func _uikitClassName(_ metadata: UnsafeRawPointer) -> UnsafeRawPointer? {
    let name = NSString(string: _typeName(unsafeBitCast(metadata, to: AnyClass.self), qualified: true))
    UIApplicationMainNames.keep(name)
    return UnsafeRawPointer(Unmanaged.passUnretained(name).toOpaque())
}

/// The C function `@UIApplicationMain`'s `main` calls, with the delegate's class name.
@_cdecl("UIApplicationMain")
func _uikitApplicationMain(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, _ principalClassName: UnsafeRawPointer?,
    _ delegateClassName: UnsafeRawPointer?
) -> Int32 {
    let name = delegateClassName.map { Unmanaged<NSString>.fromOpaque($0).takeUnretainedValue() as String }
    return UIApplicationMain(argc, argv, nil, name)
}

/// `UIApplicationMain(_:_:_:_:)`, as a `main.swift` written for iOS calls it:
/// `UIApplicationMain(CommandLine.argc, CommandLine.unsafeArgv, nil, NSStringFromClass(AppDelegate.self))`.
/// An app is a plugin that the host loads, never a program: the host creates the delegate from
/// Info.plist and never calls this. Run as a program, it says so and exits with status 64
/// (EX_USAGE), as `ApplicationDelegate.main()` does.
@discardableResult
public func UIApplicationMain(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, _ principalClassName: String?,
    _ delegateClassName: String?
) -> Int32 {
    FileHandle.standardError.write(Data(
        "\(delegateClassName ?? "the app") is an apphost app, not a program: bundle it (swift package bundle-app) and run it with apphost launch\n".utf8))
    exit(64)
}

/// The names `NSStringFromClass` handed out, alive for the process.
private enum UIApplicationMainNames {
    nonisolated(unsafe) private static var names: [NSString] = []
    private static let lock = NSLock()

    static func keep(_ name: NSString) {
        lock.lock()
        names.append(name)
        lock.unlock()
    }
}
