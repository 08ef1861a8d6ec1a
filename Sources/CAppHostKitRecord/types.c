#define _GNU_SOURCE
#include "apphost_types.h"

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// The Swift runtime's record of one image's metadata sections (SwiftShims' MetadataSections.h):
// the fields up to the type records, the only ones read here.
struct section_range {
    uintptr_t start;
    size_t length;
};

struct metadata_sections {
    uintptr_t version;
    const void *base_address;
    const void *next, *previous;
    struct section_range protocols, protocol_conformances, type_metadata;
};

// Exported by libswiftCore on ELF platforms (ImageInspectionCommon.h); `body` returns false to stop.
extern void swift_enumerateAllMetadataSections(bool (*body)(const void *sections, void *context), void *context);

// A context descriptor's first fields (docs/ABI/TypeMetadata.rst, "Nominal Type Descriptor"),
// each pointer 32 bits relative to its own address.
struct context_descriptor {
    uint32_t flags;
    int32_t parent;
    int32_t name;            // modules and types
    int32_t access_function; // types
};

enum { kind_module = 0, kind_protocol = 3, kind_class = 16, kind_struct = 17, kind_enum = 18, flag_generic = 0x80 };

// A protocol conformance descriptor's first fields: the protocol, the conforming type (how to
// read it is in the flags), the witness table's pattern, and the flags.
struct conformance_descriptor {
    int32_t protocol;
    int32_t type;
    int32_t witness_table_pattern;
    uint32_t flags;
};

enum {
    conformance_type_kind_shift = 3,
    conformance_conditional_requirements = 0xff << 8,
    conformance_global_actor_isolation = 1 << 19,
};

// Exported by libswiftCore (Runtime/Metadata.h).
extern const void *swift_getWitnessTable(const void *conformance, const void *type, const void *const *arguments);
extern const void *swift_getTypeContextDescriptor(const void *type);

// A metadata accessor: Swift's calling convention, the request in, the metadata and its state out.
struct metadata_response {
    const void *metadata;
    uintptr_t state;
};
typedef struct metadata_response (*metadata_accessor)(uintptr_t request) __attribute__((swiftcall));

static const void *relative(const int32_t *field) {
    return *field ? (const char *)field + *field : NULL;
}

// A pointer whose low bit says the target holds the address, not the thing.
static const void *relative_indirectable(const int32_t *field) {
    int32_t offset = *field;
    if (!offset) return NULL;
    const char *target = (const char *)field + (offset & ~1);
    return (offset & 1) ? *(const void *const *)target : target;
}

static unsigned kind_of(const struct context_descriptor *descriptor) {
    return descriptor->flags & 0x1f;
}

// Whether `descriptor` is named `name[0..<length]` and its parents, up to its module, the
// components before it in `name` (`Module.Outer.Inner`).
static bool named(const struct context_descriptor *descriptor, const char *name, size_t length) {
    const char *end = name + length;
    bool leaf = true;
    while (descriptor) {
        const char *component = end;
        while (component > name && component[-1] != '.') component--;
        unsigned kind = kind_of(descriptor);
        // Only types (a protocol as the last) and their module: an extension or a function's
        // context is not named so.
        if (kind != kind_module && kind != kind_class && kind != kind_struct && kind != kind_enum && !(leaf && kind == kind_protocol)) return false;
        leaf = false;
        const char *own = relative(&descriptor->name);
        size_t count = (size_t)(end - component);
        if (!own || strncmp(own, component, count) != 0 || own[count] != 0) return false;
        if (kind == kind_module) return component == name && !relative_indirectable(&descriptor->parent);
        if (component == name) return false;
        end = component - 1;
        descriptor = relative_indirectable(&descriptor->parent);
    }
    return false;
}

struct lookup {
    const char *name;
    size_t length;
    // For a conformance: the conforming type's descriptor (`name` is the protocol's).
    const void *type;
    // The image's mapped addresses, from its first segment to the end of its last.
    uintptr_t start, end;
    // Which of an image's sections to search (its offset in metadata_sections), and the
    // descriptor a record there points to if it is the one looked for.
    size_t section;
    const void *(*match)(const int32_t *record, const struct lookup *lookup);
    // The descriptor (a type's, or a conformance's) found.
    const void *found;
};

// Its address is in the image this file is linked into: the SDK's, or a test's that links it.
static const char marker;

// The plugin's path as the runner loaded it, once the SDK's entry has been called.
static const char *plugin_path;

void apphost_set_plugin_image(const char *path) {
    plugin_path = path;
}

// Sets `lookup`'s range to the plugin's image (by its path), or without one to the image that
// holds `marker`.
static int find_image(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    struct lookup *lookup = context;
    uintptr_t address = (uintptr_t)&marker, start = UINTPTR_MAX, end = 0;
    bool holds = plugin_path && info->dlpi_name && strcmp(info->dlpi_name, plugin_path) == 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[index];
        if (segment->p_type != PT_LOAD) continue;
        uintptr_t first = info->dlpi_addr + segment->p_vaddr, after = first + segment->p_memsz;
        if (first < start) start = first;
        if (after > end) end = after;
        if (!plugin_path && address >= first && address < after) holds = true;
    }
    if (!holds) return 0;
    lookup->start = start;
    lookup->end = end;
    return 1;
}

// Searches this image's records in `lookup`'s section. Only one image's sections are this
// one's: the enumeration stops after them, whatever they held.
static bool search(const void *sections, void *context) {
    struct lookup *lookup = context;
    const struct section_range *records = (const void *)((const char *)sections + lookup->section);
    if (records->start < lookup->start || records->start >= lookup->end) return true;
    const int32_t *last = (const int32_t *)(records->start + records->length);
    for (const int32_t *record = (const int32_t *)records->start; record < last && !lookup->found; record++) {
        lookup->found = lookup->match(record, lookup);
    }
    return false;
}

// A type record (32 bits relative, whose low two bits say what it points to: 0 the descriptor,
// 1 a pointer to it, else an Objective-C class, none on Linux) of the class `lookup` names.
static const void *matching_class(const int32_t *record, const struct lookup *lookup) {
    int32_t offset = *record;
    const char *target = (const char *)record + (offset & ~3);
    const struct context_descriptor *descriptor =
        (offset & 3) == 0 ? (const void *)target : (offset & 3) == 1 ? *(const void *const *)target : NULL;
    if (!descriptor || kind_of(descriptor) != kind_class || (descriptor->flags & flag_generic)) return NULL;
    return named(descriptor, lookup->name, lookup->length) ? descriptor : NULL;
}

// A conformance record of `lookup`'s type to the protocol it names: one without conditions or
// isolation to a global actor, which needs no more than a witness table.
static const void *matching_conformance(const int32_t *record, const struct lookup *lookup) {
    const struct conformance_descriptor *conformance = relative(record);
    if (!conformance || (conformance->flags & (conformance_conditional_requirements | conformance_global_actor_isolation))) return NULL;
    // The conforming type: its descriptor (0) or a pointer to it (1); else not a Swift type.
    unsigned kind = (conformance->flags >> conformance_type_kind_shift) & 7;
    const void *type = relative(&conformance->type);
    if (kind == 1 && type) type = *(const void *const *)type;
    if ((kind != 0 && kind != 1) || type != lookup->type) return NULL;
    const struct context_descriptor *protocol = relative_indirectable(&conformance->protocol);
    return protocol && kind_of(protocol) == kind_protocol && named(protocol, lookup->name, lookup->length) ? conformance : NULL;
}

const void *apphost_own_class_metadata(const char *name) {
    struct lookup lookup = {
        .name = name, .length = strlen(name), .section = offsetof(struct metadata_sections, type_metadata), .match = matching_class};
    if (!lookup.length || !dl_iterate_phdr(find_image, &lookup)) return NULL;
    swift_enumerateAllMetadataSections(search, &lookup);
    const struct context_descriptor *found = lookup.found;
    if (!found) return NULL;
    metadata_accessor accessor = (metadata_accessor)relative(&found->access_function);
    // Request 0: complete metadata, blocking until it is.
    return accessor ? accessor(0).metadata : NULL;
}

const void *apphost_own_conformance(const void *metadata, const char *protocol) {
    struct lookup lookup = {
        .name = protocol, .length = strlen(protocol), .type = swift_getTypeContextDescriptor(metadata),
        .section = offsetof(struct metadata_sections, protocol_conformances), .match = matching_conformance};
    if (!lookup.length || !lookup.type || !dl_iterate_phdr(find_image, &lookup)) return NULL;
    swift_enumerateAllMetadataSections(search, &lookup);
    return lookup.found ? swift_getWitnessTable(lookup.found, metadata, NULL) : NULL;
}
