// A plugin whose record claims another Swift toolchain. The runner must refuse it before calling
// its entry point, which would otherwise print a marker the tests look for.
#include "foreign_plugin.h"
#include <stdlib.h>
#include <unistd.h>

__attribute__((visibility("default")))
const struct apphost_plugin_record apphost_plugin_record = {
    .magic = APPHOST_PLUGIN_MAGIC,
    .abi_version = APPHOST_PLUGIN_ABI_VERSION,
    .toolchain = "clang version 15.0.0 (https://github.com/swiftlang/llvm-project.git 0000000)",
};

__attribute__((visibility("default")))
int apphost_plugin_main(const struct apphost_entry_arguments *arguments) {
    (void)arguments;
    static const char message[] = "foreign plugin code ran\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(99);
}
