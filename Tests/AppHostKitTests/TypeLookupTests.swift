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
final class LookedUpDelegate: ApplicationDelegate {
    init() {}
}
/// Its conformance is its superclass's: declared by another type.
final class InheritedDelegate: UIResponderLike {}
class UIResponderLike: ApplicationDelegate {
    required init() {}
}
final class LookedUpSceneDelegate: SceneDelegate {}

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

    /// The conformance a class's own image declares is found there, with the witness table the
    /// runtime's cast finds.
    @MainActor @Test func aConformanceOfTheImageIsFoundAmongItsOwnRecords() throws {
        // An existential metatype's metadata and witness table. (`as` keeps Swift from opening
        // the existential: the generic parameter would be the class's own metatype.)
        func parts(_ metatype: any ApplicationDelegate.Type) -> [UnsafeRawPointer] {
            let pair = unsafeBitCast(metatype as any ApplicationDelegate.Type, to: (UnsafeRawPointer, UnsafeRawPointer).self)
            return [pair.0, pair.1]
        }
        func parts(_ metatype: any SceneDelegate.Type) -> [UnsafeRawPointer] {
            let pair = unsafeBitCast(metatype as any SceneDelegate.Type, to: (UnsafeRawPointer, UnsafeRawPointer).self)
            return [pair.0, pair.1]
        }
        let type = try #require(typeNamed("\(module).LookedUpDelegate"))
        let own = try #require(ownConformance(of: type, to: DelegateProtocolName.application, as: (any ApplicationDelegate.Type).self))
        let cast = try #require(type as? any ApplicationDelegate.Type)
        let (ownParts, castParts) = (parts(own), parts(cast))
        #expect(ownParts == castParts)
        #expect(own.init() is LookedUpDelegate)
        let scene = try #require(ownConformance(of: LookedUpSceneDelegate.self, to: DelegateProtocolName.scene, as: (any SceneDelegate.Type).self))
        let sceneCast = try #require(LookedUpSceneDelegate.self as? any SceneDelegate.Type)
        let (sceneParts, sceneCastParts) = (parts(scene), parts(sceneCast))
        #expect(sceneParts == sceneCastParts)
        // None declared: not a conformance, another protocol, or one inherited.
        #expect(ownConformance(of: LookedUpClass.self, to: DelegateProtocolName.application, as: (any ApplicationDelegate.Type).self) == nil)
        #expect(ownConformance(of: LookedUpDelegate.self, to: DelegateProtocolName.scene, as: (any SceneDelegate.Type).self) == nil)
        #expect(ownConformance(of: LookedUpDelegate.self, to: "AppHostKit.Application", as: (any ApplicationDelegate.Type).self) == nil)
        #expect(ownConformance(of: InheritedDelegate.self, to: DelegateProtocolName.application, as: (any ApplicationDelegate.Type).self) == nil)
        #expect(InheritedDelegate.self as? any ApplicationDelegate.Type != nil)
    }

    /// A class of another image is still found, by `_typeByName`.
    @Test func otherImagesClassesAreFoundByTheRuntime() {
        #expect(typeNamed("Foundation.NSObject") == NSObject.self)
        #expect(typeNamed("\(module).NoSuchClass") == nil)
    }
}
