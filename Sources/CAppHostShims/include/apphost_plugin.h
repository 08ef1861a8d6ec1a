#ifndef APPHOST_PLUGIN_H
#define APPHOST_PLUGIN_H

// The C boundary between the app process's runner and a plugin. Only these types cross it;
// Swift types never do (Swift has no stable ABI on Linux), so the SDK is compiled into each plugin.

#include <stdint.h>

/// Bumped whenever the entry point, the record or the wire protocol changes incompatibly.
#define APPHOST_PLUGIN_ABI_VERSION 4u
/// "APHK": marks a record as apphost's, so a foreign symbol of the same name is not trusted.
#define APPHOST_PLUGIN_MAGIC 0x4B485041u

/// Exported by every plugin as `apphost_plugin_record`; the runner reads it before calling any
/// plugin code, and refuses a plugin whose ABI version or toolchain differs from its own.
struct apphost_plugin_record {
    uint32_t magic;
    uint32_t abi_version;
    /// The compiler that built the plugin (clang's version string of the Swift toolchain, which
    /// names the toolchain's exact llvm-project commit).
    const char *toolchain;
};

/// What the runner passes to `apphost_plugin_main`.
struct apphost_entry_arguments {
    uint32_t abi_version;
    /// The connected control socket (the wire protocol of AppHostProtocol).
    int32_t control_fd;
    /// The configuration from the host's `configure` message: WireConfiguration in its compact
    /// layout (AppHostProtocol's ConfigurationCoding.swift), `configuration_length` bytes.
    const uint8_t *configuration;
    uint64_t configuration_length;
};

/// `int apphost_plugin_main(const struct apphost_entry_arguments *)`: never returns on success.
typedef int32_t (*apphost_plugin_main_function)(const struct apphost_entry_arguments *);

/// The toolchain this translation unit is compiled by. Swift code gets the toolchain that built
/// it by calling this (the Swift compiler's clang importer compiles the header).
static inline const char *apphost_toolchain_id(void) {
#ifdef __clang_version__
    return "clang " __clang_version__;
#else
    return "unknown compiler";
#endif
}

#endif
