// apphost-init: the init (pid 1) of an app's PID namespace (README, The sandbox).
//
//   apphost-init RUNNER ARGUMENTS...
//
// The host starts it in the app's new PID and mount namespaces with the runner's descriptors on
// 0-3 and, on 4, a socket to the host. It starts the runner (pid 2, which becomes the app
// process; the host puts both in the app's cgroups before the runner gets its configuration)
// with descriptors 0-3, keeps nothing of the app's open, gives up every
// capability, reaps whatever is orphaned in the namespace, and when the app process ends writes
// how it ended on descriptor 4 and exits: the kernel then ends every process left in the
// namespace. It is a small C program, not a fork of the runner, so that starting an app costs one
// short exec rather than a copy of a Swift process (README, Performance).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

extern char **environ;

/// The socket to the host.
enum { exit_record_fd = 4 };

/// Written to the host when the app process ends (apphost_exit_record in CAppHostShims).
struct exit_record {
    int32_t code;   // CLD_EXITED, CLD_KILLED or CLD_DUMPED
    int32_t status; // exit status or signal number
};

static void drop_capabilities(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    syscall(SYS_capset, &header, data);
}

int main(int argc, char **argv) {
    if (argc < 2 || fcntl(exit_record_fd, F_SETFD, FD_CLOEXEC) != 0) {
        fprintf(stderr, "apphost-init: the host starts this, with a runner and descriptors 0-4\n");
        return 2;
    }
    pid_t app;
    int error = posix_spawn(&app, argv[1], NULL, NULL, argv + 1, environ);
    if (error != 0) {
        fprintf(stderr, "apphost-init: cannot start %s: %s\n", argv[1], strerror(error));
        return 127;
    }
    // Nothing of the app's stays open here: its control socket and output end with it.
    syscall(SYS_close_range, 0, exit_record_fd - 1, 0);
    syscall(SYS_close_range, exit_record_fd + 1, ~0U, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    drop_capabilities();
    for (;;) {
        int status = 0;
        pid_t ended = waitpid(-1, &status, __WALL);
        if (ended == app) {
            struct exit_record record;
            if (WIFEXITED(status)) {
                record.code = CLD_EXITED;
                record.status = WEXITSTATUS(status);
            } else {
                record.code = WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
                record.status = WTERMSIG(status);
            }
            ssize_t written = write(exit_record_fd, &record, sizeof record);
            (void)written;
            return 0;
        }
        if (ended < 0 && errno != EINTR) return 0;
    }
}
