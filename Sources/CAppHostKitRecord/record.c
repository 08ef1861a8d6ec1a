#include "apphost_record.h"

__attribute__((visibility("default"), used))
const struct apphost_plugin_record apphost_plugin_record = {
    .magic = APPHOST_PLUGIN_MAGIC,
    .abi_version = APPHOST_PLUGIN_ABI_VERSION,
    .toolchain = "clang " __clang_version__,
};
