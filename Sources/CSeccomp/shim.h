// libseccomp (Debian's libseccomp-dev, installed by scripts/setup), plus the function-like macros
// that do not import into Swift.
#include <seccomp.h>
#include <linux/seccomp.h>

static inline uint32_t apphost_scmp_act_errno(uint16_t error) { return SCMP_ACT_ERRNO(error); }
static inline uint32_t apphost_scmp_act_kill_process(void) { return SCMP_ACT_KILL_PROCESS; }
static inline uint32_t apphost_scmp_act_notify(void) { return SCMP_ACT_NOTIFY; }
static inline uint32_t apphost_scmp_act_allow(void) { return SCMP_ACT_ALLOW; }
static inline uint32_t apphost_scmp_arch_x86(void) { return SCMP_ARCH_X86; }
static inline uint32_t apphost_scmp_arch_x86_64(void) { return SCMP_ARCH_X86_64; }
