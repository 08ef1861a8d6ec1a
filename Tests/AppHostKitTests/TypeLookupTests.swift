import Foundation
import Testing
import CAppHostKitRecord
@testable import AppHostKit

final class LookedUpClass {}
enum LookedUpNamespace {
    final class Inner {}
}
final class LookedUpGeneric<Element> {}
struct LookedUpStruct {}

/// The look-up of Info.plist's class names (`typeNamed`): among the classes of the image the SDK
/// is linked into first (in an app process the plugin; here the tests' binary), then anywhere.
struct TypeLookupTests {
    /// This module's name, as Info.plist would write it.
    let module = String(reflecting: LookedUpClass.self).split(separator: ".")[0]

    func metadata(_ type: Any.Type) -> UnsafeRawPointer { unsafeBitCast(type, to: UnsafeRawPointer.self) }

    @Test func aClassOfTheImageIsFoundAmongItsOwnTypes() {
        #expect(apphost_own_class_metadata("\(module).LookedUpClass") == metadata(LookedUpClass.self))
        #expect(apphost_own_class_metadata("\(module).LookedUpNamespace.Inner") == metadata(LookedUpNamespace.Inner.self))
        #expect(typeNamed("\(module).LookedUpClass") == LookedUpClass.self)
    }

    @Test func whatIsNotANonGenericClassOfTheImageIsNotFoundThere() {
        for name in [
            "\(module).LookedUpStruct", "\(module).LookedUpNamespace", "\(module).LookedUpGeneric", "\(module).Inner",
            "\(module).LookedUpClas", "\(module).LookedUpClassX", "LookedUpClass", "Other.LookedUpClass", "\(module)", "",
            "\(module)..LookedUpClass", ".\(module).LookedUpClass", "Foundation.NSObject",
        ] {
            #expect(apphost_own_class_metadata(name) == nil, "\(name)")
        }
    }

    /// A class of another image is still found, by `_typeByName`.
    @Test func otherImagesClassesAreFoundByTheRuntime() {
        #expect(typeNamed("Foundation.NSObject") == NSObject.self)
        #expect(typeNamed("\(module).NoSuchClass") == nil)
    }
}
