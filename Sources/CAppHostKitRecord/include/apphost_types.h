#ifndef APPHOST_TYPES_H
#define APPHOST_TYPES_H

/// The metadata of the class `name` (`Module.Class`, or `Module.Outer.Inner`, as Info.plist names
/// a delegate), looked up only among the Swift types of the image this code is linked into (an
/// app process's plugin, which links the SDK), or NULL when it has no such non-generic class.
///
/// `_typeByName` finds the same class by scanning every loaded image's type records in load
/// order, the plugin's last: 0.17 ms of each launch, measured, against a few microseconds for
/// the plugin's own records. Reads the records through `swift_enumerateAllMetadataSections` and
/// the descriptors' layout that the Swift ABI fixes (docs/ABI/TypeMetadata.rst); a NULL answer
/// leaves the caller to `_typeByName`.
const void *apphost_own_class_metadata(const char *name);

#endif
