#ifndef APPHOST_TYPES_H
#define APPHOST_TYPES_H

/// The metadata of the class `name` (`Module.Class`, or `Module.Outer.Inner`, as Info.plist names
/// a delegate), looked up only among the Swift types of the plugin's image (below), or NULL when it
/// has no such non-generic class.
///
/// `_typeByName` finds the same class by scanning every loaded image's type records in load
/// order, the plugin's last: 0.26 ms of a launch with the class's metadata made, against 0.11
/// here (measured). Reads the records through `swift_enumerateAllMetadataSections` and
/// the descriptors' layout that the Swift ABI fixes (docs/ABI/TypeMetadata.rst); a NULL answer
/// leaves the caller to `_typeByName`.
const void *apphost_own_class_metadata(const char *name);

/// Names the plugin's image (its path, as the runner passed it to `dlopen`) as the one the two
/// look-ups here search: the SDK is a library of its own beside it (docs/launching.md, "How apps are
/// launched"). Until it is called they search the image this code is linked into (a unit
/// test's). `path` must outlive the look-ups.
void apphost_set_plugin_image(const char *path);

/// The witness table of the conformance of the type `metadata` to the protocol `protocol`
/// (`Module.Protocol`) that the plugin's image declares, without conditions or a global actor's
/// isolation, or NULL when it declares none (one inherited from a superclass is not looked for).
///
/// A cast to the protocol finds the same conformance by scanning the conformance records of every
/// loaded image: the first cast after a plugin loads finds the runtime's cache emptied (0.12–0.18
/// ms, measured). A NULL answer leaves the caller to the cast.
const void *apphost_own_conformance(const void *metadata, const char *protocol);

/// A new instance of the class `metadata`, made by the `init()` that it inherits the vtable slot
/// of from `root` (a class it descends from, whose vtable has exactly one allocating
/// initializer: Foundation's `NSObject` and its `init()`), returned +1; NULL when `metadata`
/// does not descend from `root` or `root` is not such a class.
///
/// UIKit's delegates subclass `NSObject` (or `UIResponder`, an `NSObject` here, as on iOS), whose
/// `init()` is not `required`: Swift cannot call it on a metatype, but every subclass that has an
/// `init()` overrides that slot of `root`'s vtable with its own allocating `init()` (one that
/// does not inherit it gets a stub that stops with "use of unimplemented initializer"), which is
/// what `Type.init()` would call if Swift allowed it. Reads the descriptors' layout that the Swift
/// ABI fixes (docs/ABI/TypeMetadata.rst).
const void *apphost_instantiate(const void *metadata, const void *root);

#endif
