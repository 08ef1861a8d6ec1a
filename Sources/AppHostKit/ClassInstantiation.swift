import Foundation
@_implementationOnly import CAppHostKitRecord

/// Creates the delegates Info.plist names, as UIKit does from a class name.
///
/// AppHostKit's `ApplicationDelegate` and `SceneDelegate` require `init()`, so a class of either
/// is made with it. UIKit's `UIApplicationDelegate` and `UISceneDelegate` cannot: iOS code
/// subclasses `UIResponder` or `NSObject`, whose `init()` is not `required`, and Swift calls only
/// a required initializer on a metatype. Such a class is made with the `init()` that fills
/// `NSObject.init()`'s vtable slot in its metadata (`apphost_instantiate`): its own, or the
/// one it inherited, as `AppDelegate()` would call it.
enum ClassInstantiation {
    /// A new instance of `type` made by its `init()`; nil when it neither requires `init()`
    /// through a delegate protocol nor descends from `NSObject`.
    @MainActor
    static func make(_ type: AnyClass) -> AnyObject? {
        if let delegate = type as? any ApplicationDelegate.Type { return delegate.init() }
        if let delegate = type as? any SceneDelegate.Type { return delegate.init() }
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        let root = unsafeBitCast(NSObject.self as AnyClass, to: UnsafeRawPointer.self)
        guard let object = apphost_instantiate(metadata, root) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(object).takeRetainedValue()
    }
}
