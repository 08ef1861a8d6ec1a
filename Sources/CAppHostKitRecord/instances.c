#include "apphost_types.h"

#include <stddef.h>
#include <stdint.h>

// Exported by libswiftCore (Runtime/Metadata.h).
extern const void *swift_getTypeContextDescriptor(const void *type);

// A class's metadata (without Objective-C interoperability, as on Linux): its kind, its
// superclass, then fields up to its vtable that are not read here.
struct class_metadata {
    const void *kind;
    const struct class_metadata *superclass;
};

// A class descriptor's fixed fields (docs/ABI/TypeMetadata.rst, "Class Descriptor"): eleven
// 32-bit words, then its trailing objects in a fixed order.
enum { class_descriptor_words = 11 };

// The kind-specific flags (a context descriptor's high 16 bits) of a class.
enum {
    metadata_initialization_mask = 3, // none 0, singleton 1, foreign 2
    has_resilient_superclass = 1 << 13,
    has_vtable = 1 << 15,
    flag_generic = 0x80,
};

// A method descriptor's flags: its kind in the low four bits, whether it is an instance member.
enum { method_kind_mask = 0xf, method_kind_init = 1, method_is_instance = 0x10 };

// An allocating initializer: Swift's calling convention, the metatype as `self`, the object +1.
typedef const void *(*allocating_init)(const void *metatype __attribute__((swift_context))) __attribute__((swiftcall));

// The index in class metadata of the vtable slot of `root`'s one allocating initializer, or -1.
static long allocating_init_slot(const void *root) {
    const uint32_t *descriptor = swift_getTypeContextDescriptor(root);
    if (!descriptor || (descriptor[0] & 0x1f) != 16 || (descriptor[0] & flag_generic)) return -1;
    unsigned flags = descriptor[0] >> 16;
    // A resilient superclass's vtable offset is relative to bounds known only at run time.
    if (flags & has_resilient_superclass || !(flags & has_vtable)) return -1;
    const uint32_t *trailing = descriptor + class_descriptor_words;
    switch (flags & metadata_initialization_mask) {
    case 1: trailing += 3; break; // singleton: cache, incomplete metadata, completion function
    case 2: trailing += 1; break; // foreign: completion function
    }
    uint32_t offset = trailing[0], size = trailing[1];
    const uint32_t *methods = trailing + 2;
    long slot = -1;
    for (uint32_t index = 0; index < size; index++) {
        uint32_t method = methods[2 * index];
        if ((method & method_kind_mask) != method_kind_init || (method & method_is_instance)) continue;
        if (slot >= 0) return -1; // more than one: which is init() is not written here
        slot = (long)offset + (long)index;
    }
    return slot;
}

const void *apphost_instantiate(const void *metadata, const void *root) {
    const struct class_metadata *class = metadata;
    while (class && class != root) class = class->superclass;
    if (!class) return NULL;
    long slot = allocating_init_slot(root);
    if (slot < 0) return NULL;
    allocating_init make = ((allocating_init const *)metadata)[slot];
    return make ? make(metadata) : NULL;
}
