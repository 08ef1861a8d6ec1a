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
/// look-ups here search: the SDK is a library of its own beside it (README.md, "How apps are
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

#endif
