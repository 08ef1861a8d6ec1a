// apphost-init: the init (pid 1) of an app's PID namespace (docs/sandbox.md, "The sandbox").
//
//   apphost-init [--hide DIR] [--writable PATH]... [--readable PATH]... [--landlock-read PATH]... [--landlock-write PATH]...
//   apphost-init --standby --hide DIR [--landlock-read PATH]... [--landlock-write PATH]...
//
// The host starts it in the app's new PID and mount namespaces (apphost_spawn), which starts
// the app process (the runner, pid 2) just before this program, with a socket to the host on
// descriptor 5 and, on 6, one end of the socket pair the runner reads as its descriptor 5 (the
// runner's 4 is its diagnostics socket, which this closes). While
// the runner starts up, this isolates the namespace's file system (apphost_isolate_file_system:
// DIR hidden but for the PATHs, everything read-only but the writable PATHs, a /proc of the
// namespace), makes the app's Landlock ruleset of the --landlock rules (landlock.c) and tells
// the runner how that went ('0' with the ruleset, or '1' and the failure), which the runner
// waits for before it restricts its files with it and loads any app code. Then it keeps nothing of the
// app's open, gives up every capability, reaps whatever is orphaned in the namespace, and when
// the app process ends writes how it ended on descriptor 5 and exits: the kernel then ends every
// process left in the namespace. It is a small C program, not a fork of the runner, so that
// starting an app costs one short exec, made while the runner starts, rather than a copy of a
// Swift process (docs/performance.md). With --standby (an app process made ahead of its launch,
// docs/launching.md, "How apps are launched"), the options come later, from the host on descriptor 5: a
// 4-byte length, then the options, each ending in a NUL byte; the host's closing the socket
// first ends it, and the app process with it. Before the options come it makes the mount
// namespace and does there what names no app (DIR hidden, the other hosts' images detached,
// everything read-only, the /proc) and passes it to the runner ('N' with the namespace), which
// joins it before its launch, and adds its --landlock rules (those every app shares) to a
// ruleset, so that a launch waits only for the app's PATHs to be mounted and its rules added
// (apphost_isolate_prepare, then apphost_isolate_show); the host says when the app's containers
// are made ('C' on descriptor 5), after its options.

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
#include <sys/stat.h>
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

/// A Landlock rule the host asks for (--landlock-read PATH, --landlock-write PATH), and the file
/// it named when added.
struct landlock_rule {
    const char *path;
    int writable, added;
    uint64_t device, inode;
};

/// Landlock rules, and the ruleset they are added to (-1: none made yet; a standby's shared
/// rules keep theirs from before the launch, the launch's rules go into that one).
struct landlock_rules {
    struct landlock_rule rules[APPHOST_LANDLOCK_MAXIMUM_RULES];
    int count, fd;
};

/// What the host asks for, parsed from the options.
struct isolation {
    const char *hidden;
    const char *writable[APPHOST_ISOLATION_MAXIMUM_PATHS];
    const char *readable[APPHOST_ISOLATION_MAXIMUM_PATHS];
    int writable_count, readable_count;
    /// The app's Landlock rules, which this adds to a ruleset for the runner.
    struct landlock_rules landlock;
};

static int usage(void) {
    fprintf(stderr, "apphost-init: the host starts this, as pid 1 with the app process as pid 2: apphost-init "
                    "[--hide DIR] [--writable PATH]... [--readable PATH]... [--landlock-read PATH]... [--landlock-write PATH]..., "
                    "or apphost-init --standby --hide DIR [--landlock-read PATH]... [--landlock-write PATH]...\n");
    return 2;
}

/// Takes a --landlock-read or --landlock-write option into `rules`; returns whether it was one
/// (and fitted). A path that is not absolute names nothing the app reaches: no rule.
static int parse_landlock(const char *option, const char *value, struct landlock_rules *rules) {
    int writable = strcmp(option, "--landlock-write") == 0;
    if (!writable && strcmp(option, "--landlock-read") != 0) return 0;
    if (value[0] != '/') return 1;
    if (rules->count >= APPHOST_LANDLOCK_MAXIMUM_RULES) return 0;
    rules->rules[rules->count++] = (struct landlock_rule){ value, writable, 0, 0, 0 };
    return 1;
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
        } else if (!parse_landlock(option, value, &isolation->landlock)) {
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

/// Adds `rule` to the ruleset `fd`, noting what it named. Returns 0, or -1 with why in `failure`.
static int add_landlock_rule(int fd, struct landlock_rule *rule, char *failure, size_t size) {
    int result = apphost_landlock_add(fd, rule->path, rule->writable, &rule->device, &rule->inode);
    if (result < 0) {
        snprintf(failure, size, "cannot add the Landlock rule for %s: %s", rule->path, strerror(errno));
        return -1;
    }
    rule->added = result == 0;
    return 0;
}

/// Which of a launch's rules to add: all, those outside the hidden directory (the app's
/// containers and a bundle in it are not there before the launch's mounts), or those in it.
enum selection { all_rules, outside_hidden, inside_hidden };

/// Adds `rules` (those `selection` picks, `hidden` the directory it speaks of) to `*fd`, making
/// the ruleset first if there is none; -1 where the kernel has no Landlock. Returns 0, or -1 with
/// why in `failure`.
static int add_landlock_rules(int *fd, struct landlock_rules *rules, enum selection selection, const char *hidden,
                              char *failure, size_t size) {
    if (*fd < 0) {
        *fd = apphost_landlock_create();
        if (*fd < 0) {
            if (errno == ENOSYS || errno == EOPNOTSUPP) return 0;
            snprintf(failure, size, "cannot make a Landlock ruleset: %s", strerror(errno));
            return -1;
        }
    }
    for (int index = 0; index < rules->count; index++) {
        if (selection != all_rules && (apphost_path_is_below(rules->rules[index].path, hidden) != 0) != (selection == inside_hidden)) continue;
        if (add_landlock_rule(*fd, &rules->rules[index], failure, size) != 0) return -1;
    }
    return 0;
}

/// A standby's rules, added before its launch, checked again at the launch (they name system
/// paths, which the launch's mounts leave alone): a rule names an inode, so a path that names
/// another since (a file written anew and renamed over, as useradd does /etc/passwd; a directory
/// mounted over) gets a rule for that one too, and one missing or out of reach then is tried
/// again.
static int renew_landlock_rules(struct landlock_rules *rules, char *failure, size_t size) {
    for (int index = 0; index < rules->count; index++) {
        struct landlock_rule *rule = &rules->rules[index];
        struct stat info;
        if (rule->added && (stat(rule->path, &info) != 0 || ((uint64_t)info.st_dev == rule->device && (uint64_t)info.st_ino == rule->inode))) {
            continue;
        }
        struct landlock_rule again = *rule;
        if (add_landlock_rule(rules->fd, &again, failure, size) != 0) return -1;
    }
    return 0;
}

/// Waits for the host's word that the app's containers are made (a standby's launch: the host
/// makes them once it has configured the app process). Returns 0, or -1 with why in `failure`.
static int await_containers(char *failure, size_t size) {
    char word = 0;
    ssize_t got;
    do {
        got = read(channel_fd, &word, 1);
    } while (got < 0 && errno == EINTR);
    if (got == 1 && word == 'C') return 0;
    snprintf(failure, size, "the host did not make the app's containers");
    return -1;
}

/// Isolates the file system, makes the app's Landlock ruleset (the standby's `prepared` one, if
/// it made one, completed) and tells the runner how it went: '0' with the ruleset (none where
/// the kernel has no Landlock), or '1' and why not. A standby adds what is outside the hidden
/// directory, and checks what it added before its launch, while the host makes the app's
/// containers; what is in it, once it has mounted them.
static void isolate(struct isolation *isolation, struct namespace *namespace, struct landlock_rules *prepared, int report) {
    char message[1024] = "0";
    char *failure = message + 1;
    size_t size = sizeof message - 1;
    int ruleset = prepared->fd;
    int failed;
    if (namespace->hidden) {
        const char *hidden = namespace->hidden;
        failed = check_prepared(isolation, namespace, failure, size) != 0
            || (ruleset >= 0 ? renew_landlock_rules(prepared, failure, size) : add_landlock_rules(&ruleset, prepared, all_rules, NULL, failure, size)) != 0
            || add_landlock_rules(&ruleset, &isolation->landlock, outside_hidden, hidden, failure, size) != 0
            || await_containers(failure, size) != 0
            || apphost_isolate_show(isolation->hidden, namespace->hidden_fd, isolation->writable, isolation->writable_count,
                                    isolation->readable, isolation->readable_count, failure, size) != 0
            || add_landlock_rules(&ruleset, &isolation->landlock, inside_hidden, hidden, failure, size) != 0;
        close(namespace->hidden_fd);
    } else {
        failed = apphost_isolate_file_system(isolation->hidden, isolation->writable, isolation->writable_count,
                                             isolation->readable, isolation->readable_count, failure, size) != 0
            || add_landlock_rules(&ruleset, &isolation->landlock, all_rules, NULL, failure, size) != 0;
    }
    if (failed) message[0] = '1';
    int passed = failed ? -1 : ruleset;
    ssize_t written = apphost_send_with_fds(report, message, strlen(message), &passed, passed >= 0 ? 1 : 0);
    (void)written;
    if (ruleset >= 0) close(ruleset);
    close(report);
}

/// A standby's rules, before its launch: the ones every app's namespace shares (the host names
/// them in its options), in a ruleset of its own. One that cannot be made now is made at the
/// launch, with the app's.
static void prepare_landlock(struct landlock_rules *shared) {
    char failure[512];
    if (add_landlock_rules(&shared->fd, shared, all_rules, NULL, failure, sizeof failure) != 0 && shared->fd >= 0) {
        close(shared->fd);
        shared->fd = -1;
    }
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
    isolation.landlock.fd = -1;
    static char storage[65536];
    static char *options[2 * (APPHOST_ISOLATION_MAXIMUM_PATHS + APPHOST_LANDLOCK_MAXIMUM_RULES) + 4];
    static struct namespace namespace = {-1, NULL, -1};
    // A standby's rules (its options), made before its launch.
    static struct landlock_rules shared = { .fd = -1 };
    int standby = argc >= 2 && strcmp(argv[1], "--standby") == 0 && getpid() == 1;
    if (standby) {
        if (argc < 4 || argc % 2 != 0 || strcmp(argv[2], "--hide") != 0 || argv[3][0] != '/') return usage();
        for (int index = 4; index + 1 < argc; index += 2) {
            if (!parse_landlock(argv[index], argv[index + 1], &shared)) return usage();
        }
        // The app process's descriptors are not kept while waiting: if it ends meanwhile, the
        // host sees its control socket close and does not use this standby.
        syscall(SYS_close_range, 0, channel_fd - 1, 0);
        // One that cannot be prepared ends (and its app process with it): the host finds it gone
        // and forks an app process for the launch, which makes its namespace and says why not.
        char failure[512];
        if (prepare_namespace(&namespace, argv[3], failure, sizeof failure) != 0) return 1;
        pass_namespace(&namespace, report_fd);
        prepare_landlock(&shared);
        argc = receive_options(storage, sizeof storage, options, (int)(sizeof options / sizeof options[0]));
        if (argc == 0) return 0;
        options[0] = argv[0];
        argv = options;
    }
    if (getpid() != 1 || !parse(argc, argv, &isolation) || fcntl(channel_fd, F_SETFD, FD_CLOEXEC) != 0
        || fcntl(report_fd, F_GETFD) < 0) {
        return usage();
    }
    isolate(&isolation, &namespace, &shared, report_fd);
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
