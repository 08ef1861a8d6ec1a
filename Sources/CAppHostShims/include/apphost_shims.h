#ifndef APPHOST_SHIMS_H
#define APPHOST_SHIMS_H

// Syscalls and macros that Swift's Glibc module does not import (variadic prctl, siginfo_t
// unions, GNU-only declarations). Each wrapper returns -1 and sets errno on failure, like libc.

#include <sys/types.h>
#include <sys/resource.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>

/// prctl(PR_SET_PDEATHSIG, sig)
int apphost_set_parent_death_signal(int sig);
/// prctl(PR_SET_NAME, name): the name ps and top show for the calling thread.
int apphost_set_thread_name(const char *name);
/// pidfd_open(pid, 0), close-on-exec.
int apphost_pidfd_open(pid_t pid);
/// pidfd_send_signal(pidfd, sig, NULL, 0)
int apphost_pidfd_send_signal(int pidfd, int sig);

/// How a child ended or stopped, read from waitid's siginfo and rusage.
struct apphost_child_status {
    int code;          // CLD_EXITED, CLD_KILLED, CLD_DUMPED, CLD_STOPPED, ... or 0 if none yet
    int status;        // exit status or signal number
    int64_t user_usec; // CPU time, only for a reaped child
    int64_t system_usec;
    int64_t max_rss_kib;
};

/// waitid(P_PIDFD, pidfd, &info, options, &rusage) through the raw syscall, which (unlike glibc's
/// wrapper) returns the child's resource usage.
int apphost_waitid_pidfd(int pidfd, int options, struct apphost_child_status *out);

/// setvbuf(stdout, NULL, _IOLBF, 0): the app's output reaches the host a line at a time.
void apphost_line_buffer_stdout(void);

/// pipe2(fds, O_CLOEXEC)
int apphost_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): close every fd >= lowfd in the child.
int apphost_spawn_close_from(posix_spawn_file_actions_t *actions, int lowfd);

/// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): the kernel's Landlock ABI
/// version, or -1 (errno ENOSYS or EOPNOTSUPP) where Landlock is missing or disabled.
int apphost_landlock_abi_version(void);

#endif
