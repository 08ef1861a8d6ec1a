#define _GNU_SOURCE
#include "apphost_shims.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include <stdio.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int apphost_set_parent_death_signal(int sig) { return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0); }

int apphost_set_thread_name(const char *name) { return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

int apphost_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int apphost_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

int apphost_waitid_pidfd(int pidfd, int options, struct apphost_child_status *out) {
    siginfo_t info;
    struct rusage usage;
    memset(&info, 0, sizeof info);
    memset(&usage, 0, sizeof usage);
    memset(out, 0, sizeof *out);
    if (syscall(SYS_waitid, P_PIDFD, pidfd, &info, options, &usage) != 0) return -1;
    if (info.si_pid == 0) return 0; // WNOHANG and nothing to report
    out->code = info.si_code;
    out->status = info.si_status;
    out->user_usec = (int64_t)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec;
    out->system_usec = (int64_t)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
    out->max_rss_kib = usage.ru_maxrss;
    return 0;
}

void apphost_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

int apphost_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int apphost_spawn_close_from(posix_spawn_file_actions_t *actions, int lowfd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowfd);
}

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

int apphost_landlock_abi_version(void) {
    return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
}
