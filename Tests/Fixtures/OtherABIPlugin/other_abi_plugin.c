// A plugin built by this toolchain against an SDK of another ABI version. The runner must refuse
// it before calling its entry point.
#include "other_abi_plugin.h"
#include <unistd.h>

__attribute__((visibility("default")))
const struct apphost_plugin_record apphost_plugin_record = {
    .magic = APPHOST_PLUGIN_MAGIC,
    .abi_version = APPHOST_PLUGIN_ABI_VERSION + 41,
    .toolchain = "clang " __clang_version__,
};

__attribute__((visibility("default")))
int apphost_plugin_main(const struct apphost_entry_arguments *arguments) {
    (void)arguments;
    static const char message[] = "other-ABI plugin code ran\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(99);
}
