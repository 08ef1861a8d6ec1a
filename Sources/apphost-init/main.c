// apphost-init: the init (pid 1) of an app's PID namespace (README, The sandbox).
//
//   apphost-init [--hide DIR] [--writable PATH]... [--readable PATH]...
//   apphost-init --standby --hide DIR
//
// The host starts it in the app's new PID and mount namespaces (apphost_spawn), which starts
// the app process (the runner, pid 2) just before this program, with a socket to the host on
// descriptor 5 and, on 6, one end of the socket pair the runner reads as its descriptor 5 (the
// runner's 4 is its diagnostics socket, which this closes). While
// the runner starts up, this isolates the namespace's file system (apphost_isolate_file_system:
// DIR hidden but for the PATHs, everything read-only but the writable PATHs, a /proc of the
// namespace) and tells the runner how that went ('0', or '1' and the failure), which the runner
// waits for before it restricts its files (Landlock) and loads any app code. Then it keeps nothing of the
// app's open, gives up every capability, reaps whatever is orphaned in the namespace, and when
// the app process ends writes how it ended on descriptor 5 and exits: the kernel then ends every
// process left in the namespace. It is a small C program, not a fork of the runner, so that
// starting an app costs one short exec, made while the runner starts, rather than a copy of a
// Swift process (README, Performance). With --standby (an app process made ahead of its launch,
// README, "How apps are launched"), the options come later, from the host on descriptor 5: a
// 4-byte length, then the options, each ending in a NUL byte; the host's closing the socket
// first ends it, and the app process with it. Before the options come it makes the mount
// namespace and does there what names no app (DIR hidden, the other hosts' images detached,
// everything read-only, the /proc) and passes it to the runner ('N' with the namespace), which
// joins it before its launch, so that a launch waits only for the app's PATHs to be mounted
// (apphost_isolate_prepare, then apphost_isolate_show).

#define _GNU_SOURCE
#include "apphost_namespaces.h"
#include "apphost_shims.h"
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
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

/// The socket to the host, and the write end of the runner's isolation report.
enum { channel_fd = 5, report_fd = 6 };
/// The app process: the first process of the namespace after this one.
enum { app_pid = 2 };

/// What the host asks for, parsed from the options.
struct isolation {
    const char *hidden;
    const char *writable[APPHOST_ISOLATION_MAXIMUM_PATHS];
    const char *readable[APPHOST_ISOLATION_MAXIMUM_PATHS];
    int writable_count, readable_count;
};

static int usage(void) {
    fprintf(stderr, "apphost-init: the host starts this, as pid 1 with the app process as pid 2: apphost-init "
                    "[--hide DIR] [--writable PATH]... [--readable PATH]..., or apphost-init --standby --hide DIR\n");
    return 2;
}

/// Parses the options; returns whether they are whole.
static int parse(int argc, char **argv, struct isolation *isolation) {
    int index = 1;
    for (; index + 1 < argc; index += 2) {
        const char *option = argv[index], *value = argv[index + 1];
        int full = isolation->writable_count + isolation->readable_count >= APPHOST_ISOLATION_MAXIMUM_PATHS;
        if (strcmp(option, "--hide") == 0) {
            isolation->hidden = value;
        } else if (strcmp(option, "--writable") == 0 && !full) {
            isolation->writable[isolation->writable_count++] = value;
        } else if (strcmp(option, "--readable") == 0 && !full) {
            isolation->readable[isolation->readable_count++] = value;
        } else {
            return 0;
        }
    }
    return index == argc;
}

/// The options of a standby's launch, as the host writes them: `storage` holds them, `argv` points
/// into it (argv[0] unused). Returns argc, or 0 if the host closed the socket or wrote nonsense.
static int receive_options(char *storage, size_t size, char **argv, int capacity) {
    uint32_t length = 0;
    size_t have = 0;
    while (have < sizeof length) {
        ssize_t got = read(channel_fd, (char *)&length + have, sizeof length - have);
        if (got <= 0 && !(got < 0 && errno == EINTR)) return 0;
        if (got > 0) have += (size_t)got;
    }
    if (length == 0 || length >= size) return 0;
    for (have = 0; have < length;) {
        ssize_t got = read(channel_fd, storage + have, length - have);
        if (got <= 0 && !(got < 0 && errno == EINTR)) return 0;
        if (got > 0) have += (size_t)got;
    }
    if (storage[length - 1] != 0) return 0;
    int argc = 1;
    for (char *option = storage; option < storage + length && argc < capacity; option += strlen(option) + 1) argv[argc++] = option;
    return argc;
}

static void drop_capabilities(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    syscall(SYS_capset, &header, data);
}

/// A standby's mount namespace, made after the init started (the runner joins it before its
/// launch, pass_namespace) and isolated but for the app's paths before its launch: `hidden` as
/// it was before it was covered.
struct namespace {
    int fd;
    const char *hidden;
    int hidden_fd;
};

/// Before its launch, while nothing waits: makes a standby's mount namespace (a copy of the
/// host's mounts as they are now) and does in it what names no app (apphost_isolate_prepare).
/// Returns 0, or -1 with why not in `failure`. The host does not use a standby whose namespace
/// misses a container image it has mounted since (Supervisor+Standby.swift).
static int prepare_namespace(struct namespace *namespace, const char *hidden, char *failure, size_t size) {
    namespace->hidden = hidden;
    if (unshare(CLONE_NEWNS) != 0) {
        snprintf(failure, size, "unshare of the mount namespace: %s", strerror(errno));
        return -1;
    }
    // Opened before the namespace's own /proc covers the host's: it is this namespace's either way.
    namespace->fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (namespace->fd < 0) {
        snprintf(failure, size, "open /proc/self/ns/mnt: %s", strerror(errno));
        return -1;
    }
    return apphost_isolate_prepare(hidden, NULL, 0, &namespace->hidden_fd, failure, size);
}

/// What the launch asks of a namespace prepared before it: the same directory hidden, and the
/// app's writable paths in it (the detach kept no image elsewhere). Writes why not into `failure`.
static int check_prepared(const struct isolation *isolation, const struct namespace *namespace, char *failure, size_t size) {
    if (!isolation->hidden || strcmp(isolation->hidden, namespace->hidden) != 0) {
        snprintf(failure, size, "the standby hid %s, not %s", namespace->hidden, isolation->hidden ? isolation->hidden : "nothing");
        return -1;
    }
    for (int index = 0; index < isolation->writable_count; index++) {
        const char *path = isolation->writable[index];
        if (!apphost_path_is_below(path, namespace->hidden)) {
            snprintf(failure, size, "%s is not in %s, which the standby hid", path, namespace->hidden);
            return -1;
        }
    }
    return 0;
}

/// Isolates the file system and tells the runner how it went: '0', or '1' and why not.
static void isolate(const struct isolation *isolation, struct namespace *namespace, int report) {
    char message[1024] = "0";
    if (namespace->hidden) {
        if (check_prepared(isolation, namespace, message + 1, sizeof message - 1) != 0
            || apphost_isolate_show(isolation->hidden, namespace->hidden_fd, isolation->writable, isolation->writable_count,
                                    isolation->readable, isolation->readable_count, message + 1, sizeof message - 1) != 0) {
            message[0] = '1';
        }
        close(namespace->hidden_fd);
    } else if (apphost_isolate_file_system(isolation->hidden, isolation->writable, isolation->writable_count,
                                           isolation->readable, isolation->readable_count, message + 1, sizeof message - 1) != 0) {
        message[0] = '1';
    }
    ssize_t written = write(report, message, strlen(message));
    (void)written;
    close(report);
}

/// Passes a standby's prepared mount namespace to its runner, which joins it before its launch
/// (while it still may: its launch's confinement takes the capability and forbids setns), so
/// that the launch's runner confines itself while this mounts the app's paths.
static void pass_namespace(struct namespace *namespace, int report) {
    int passed = namespace->fd;
    ssize_t written = apphost_send_with_fds(report, "N", 1, &passed, 1);
    (void)written;
    close(namespace->fd);
    namespace->fd = -1;
}

int main(int argc, char **argv) {
    struct isolation isolation;
    memset(&isolation, 0, sizeof isolation);
    static char storage[65536];
    static char *options[2 * APPHOST_ISOLATION_MAXIMUM_PATHS + 4];
    static struct namespace namespace = {-1, NULL, -1};
    int standby = argc >= 2 && strcmp(argv[1], "--standby") == 0 && getpid() == 1;
    if (standby) {
        if (argc != 4 || strcmp(argv[2], "--hide") != 0 || argv[3][0] != '/') return usage();
        // The app process's descriptors are not kept while waiting: if it ends meanwhile, the
        // host sees its control socket close and does not use this standby.
        syscall(SYS_close_range, 0, channel_fd - 1, 0);
        // One that cannot be prepared ends (and its app process with it): the host finds it gone
        // and forks an app process for the launch, which makes its namespace and says why not.
        char failure[512];
        if (prepare_namespace(&namespace, argv[3], failure, sizeof failure) != 0) return 1;
        pass_namespace(&namespace, report_fd);
        argc = receive_options(storage, sizeof storage, options, (int)(sizeof options / sizeof options[0]));
        if (argc == 0) return 0;
        options[0] = argv[0];
        argv = options;
    }
    if (getpid() != 1 || !parse(argc, argv, &isolation) || fcntl(channel_fd, F_SETFD, FD_CLOEXEC) != 0
        || fcntl(report_fd, F_GETFD) < 0) {
        return usage();
    }
    isolate(&isolation, &namespace, report_fd);
    // Nothing of the app's stays open here: its control socket and output end with it.
    syscall(SYS_close_range, 0, channel_fd - 1, 0);
    syscall(SYS_close_range, channel_fd + 1, ~0U, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    drop_capabilities();
    for (;;) {
        int status = 0;
        pid_t ended = waitpid(-1, &status, __WALL);
        if (ended == app_pid) {
            struct apphost_exit_record record;
            if (WIFEXITED(status)) {
                record.code = CLD_EXITED;
                record.status = WEXITSTATUS(status);
            } else {
                record.code = WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
                record.status = WTERMSIG(status);
            }
            ssize_t written = write(channel_fd, &record, sizeof record);
            (void)written;
            return 0;
        }
        if (ended < 0 && errno != EINTR) return 0;
    }
}

// SwiftPM links every executable with the Swift runtime's image registration (swiftrt.o), whose
// constructor calls this; answered here with nothing, none of the Swift runtime is linked into
// this C program (6.7 MB and about 0.2 ms more per launch with it).
void swift_addNewDSOImage(const void *sections) { (void)sections; }
