#ifndef APPHOST_UIKIT_MAIN_H
#define APPHOST_UIKIT_MAIN_H

// What `@UIApplicationMain` calls, declared as UIKit's C function is, for the compiler to find
// (the names must be these). Its `main` is
// `UIApplicationMain(argc, argv, nil, NSStringFromClass(AppDelegate.self))`: both are
// defined in Swift by the UIKit module (UIApplicationMain.swift), the strings being Foundation's
// NSString objects. The host never runs an app's `main`: it creates the delegate Info.plist names.
int UIApplicationMain(int argc, char *_Nullable *_Nonnull argv, const void *_Nullable principalClassName,
                      const void *_Nullable delegateClassName);

#endif
