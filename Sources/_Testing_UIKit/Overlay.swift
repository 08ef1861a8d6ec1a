// swift-testing declares a cross-import overlay for UIKit (Testing.swiftcrossimport/UIKit.swiftoverlay
// in the toolchain): a file that imports both Testing and a module named UIKit makes the compiler
// import _Testing_UIKit, which Linux toolchains do not ship, and fail with "no such module
// '_Testing_UIKit'". This empty module, built before UIKit, is what it finds: an app's tests can
// import UIKit and Testing together. It adds nothing.
