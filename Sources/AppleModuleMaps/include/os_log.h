#ifndef APPHOST_OS_LOG_H
#define APPHOST_OS_LOG_H
// Empty: `import os.log` imports this submodule, and with it the os module, its Swift overlay.
#endif
