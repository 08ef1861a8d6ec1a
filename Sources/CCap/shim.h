#ifndef APPHOST_CCAP_SHIM_H
#define APPHOST_CCAP_SHIM_H
// libcap (Debian libcap-dev). libcap sets errno on failure.
#include <sys/capability.h>
#include <sys/prctl.h>

/// prctl(PR_SET_NO_NEW_PRIVS, 1): no exec can ever grant privileges again (setuid bits, file caps).
static inline int apphost_set_no_new_privileges(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }
#endif
