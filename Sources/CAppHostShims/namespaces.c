#define _GNU_SOURCE
#include "apphost_namespaces.h"
#include "apphost_shims.h"
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/rseq.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

extern char **environ;

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

// The mounts of apphost_isolate_file_system (and of the probe, which tries them).

/// mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL): no mount made here reaches the namespace
/// this one was copied from, and none made there later (read-write) reaches this one.
static int apphost_mount_stop_propagation(void);
/// mount(source, target, NULL, MS_BIND | MS_REC, NULL): `source` (which may be
/// /proc/self/fd/N) is mounted at `target` too.
static int apphost_mount_bind(const char *source, const char *target);
/// An empty tmpfs over `path`, hiding what it holds.
static int apphost_mount_empty_directory(const char *path);
/// mount_setattr(AT_FDCWD, path, AT_RECURSIVE, MOUNT_ATTR_RDONLY set or cleared): the mount at
/// `path` and every mount below it become read-only (or read-write again).
static int apphost_mount_set_read_only(const char *path, int read_only);
/// A /proc of the caller's PID namespace over the one it had (read-write: made read-only after).
static int apphost_mount_proc(void);
/// Detaches (MNT_DETACH) every ext4 mount whose loop device's backing file is in a
/// `storage/containers/` or `storage/groups/` directory (an apphost host's container image),
/// except at `keep` (`count` paths) and below `hidden/`. Returns how many it detached.
static int apphost_detach_container_images(const char *const *keep, int count, const char *hidden);

/// The most descriptors a spawned process is given.
#define SPAWN_MAXIMUM_DESCRIPTORS 8
/// The child's stack until execve: it runs a few system calls.
#define SPAWN_STACK_SIZE (128 * 1024)
/// From the launch template, the app process forked by the init runs on a copy of the init's
/// stack for good: a main thread's stack.
#define TEMPLATE_STACK_SIZE (8 * 1024 * 1024)

/// What the parent hands the child, in the memory they share until execve.
struct spawn_job {
    const char *path;
    char *const *argv;
    char *const *envp;
    const int *fds;
    int count;
    int namespaces;
    /// With namespaces: the app process, started by the init before it execs, on its own stack.
    const char *app_path;
    char *const *app_argv;
    char *app_stack;
    /// From the launch template: the app process is a fork of the template that calls this,
    /// with `envp` as its environment, instead of an exec of `app_path`.
    void (*app_main)(void);
    /// From the launch template: a cgroup v2 directory for the app process to start in (or -1),
    /// and whether it did (CLONE_INTO_CGROUP).
    int cgroup;
    int started_in_cgroup;
    /// Whether the app process must start in `cgroup` or not at all (its configuration waits
    /// for it, so it would run before the host could move it).
    int require_cgroup;
    /// The pipe on which the init reports the file system's isolation to the app process.
    int report[2];
    char uid_map[32];
    char gid_map[32];
    /// Set by the child when it fails before execve; read by the parent once it resumes.
    volatile int error;
    const char *volatile step;
};

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t length = strlen(text);
    ssize_t written = write(fd, text, length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == (ssize_t)length ? 0 : -1;
}

/// In a new user namespace: the caller's uid and gid map to themselves, so files keep their
/// owners and the app its uid. An unprivileged process may write only this map, and a gid map
/// only once setgroups is denied.
static int map_identity(struct spawn_job *job) {
    job->step = "user namespace map";
    if (write_text("/proc/self/setgroups", "deny") != 0) return -1;
    if (write_text("/proc/self/gid_map", job->gid_map) != 0) return -1;
    return write_text("/proc/self/uid_map", job->uid_map);
}

/// In a new user namespace with the identity map, the child holds every capability there, but
/// execve takes them from a uid other than 0: CAP_SYS_ADMIN is kept across it (inheritable and
/// ambient) for the init to make its mounts; the init clears the ambient set before it starts
/// the runner, and gives up every capability once the mounts are made.
static int keep_mount_capability(struct spawn_job *job) {
    job->step = "keep CAP_SYS_ADMIN";
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &header, data) != 0) return -1;
    data[CAP_SYS_ADMIN / 32].inheritable |= 1u << (CAP_SYS_ADMIN % 32);
    if (syscall(SYS_capset, &header, data) != 0) return -1;
    return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0);
}

static void prepare_maps(struct spawn_job *job) {
    snprintf(job->uid_map, sizeof job->uid_map, "%u %u 1\n", (unsigned)getuid(), (unsigned)getuid());
    snprintf(job->gid_map, sizeof job->gid_map, "%u %u 1\n", (unsigned)getgid(), (unsigned)getgid());
}

static int clone_flags(int namespaces) {
    int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD;
    if (namespaces & APPHOST_NAMESPACE_PID_AND_MOUNT) flags |= CLONE_NEWPID | ((namespaces & APPHOST_NAMESPACE_MOUNT_LATER) ? 0 : CLONE_NEWNS);
    if (namespaces & APPHOST_NAMESPACE_USER) flags |= CLONE_NEWUSER;
    return flags;
}

/// execve with no signal blocked (a clone here starts with every one blocked); returns only
/// on failure.
static void exec_unblocked(const char *path, char *const argv[], char *const envp[]) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
}

// The launch template (docs/launching.md, "How apps are launched").

/// Where glibc keeps the calling thread's tid in its thread descriptor, found by
/// apphost_template_prepare; -1 if it was not found.
static long template_tid_offset = -1;

/// The template's placeholders: where its environment holds each variable's value, and how
/// many bytes that value has (apphost_template_prepare).
#define TEMPLATE_MAXIMUM_PLACEHOLDERS 16
static struct {
    const char *name;
    char *value;
    size_t capacity;
} template_placeholders[TEMPLATE_MAXIMUM_PLACEHOLDERS];
static int template_placeholder_count;

/// In a fork of the template: writes each placeholder's value from `envp` into the template's
/// own bytes for it (an empty value where `envp` has none). Returns -1 if one does not fit.
static int fill_placeholders(char *const envp[]) {
    for (int index = 0; index < template_placeholder_count; index++) {
        size_t length = strlen(template_placeholders[index].name);
        const char *value = "";
        for (char *const *entry = envp; *entry; entry++) {
            if (strncmp(*entry, template_placeholders[index].name, length) == 0 && (*entry)[length] == '=') {
                value = *entry + length + 1;
                break;
            }
        }
        if (strlen(value) > template_placeholders[index].capacity) return -1;
        memcpy(template_placeholders[index].value, value, strlen(value) + 1);
    }
    return 0;
}

int apphost_template_take_environment(char *const variables[]) {
    // A template's fork writes them over its placeholders too (what /proc/PID/environ shows).
    if (template_placeholder_count != 0 && fill_placeholders(variables) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    // The environment becomes `variables` and whatever it had of other names (never freed).
    size_t count = 0, added = 0;
    while (environ && environ[count]) count++;
    while (variables[added]) added++;
    char **merged = calloc(count + added + 1, sizeof *merged);
    if (!merged) return -1;
    size_t index = 0;
    for (size_t variable = 0; variable < added; variable++) {
        if (!(merged[index++] = strdup(variables[variable]))) return -1;
    }
    for (size_t old = 0; old < count; old++) {
        const char *equals = strchr(environ[old], '=');
        size_t length = equals ? (size_t)(equals - environ[old]) : strlen(environ[old]);
        int replaced = 0;
        for (size_t variable = 0; variable < added && !replaced; variable++) {
            replaced = strncmp(variables[variable], environ[old], length) == 0 && variables[variable][length] == '=';
        }
        if (!replaced) merged[index++] = environ[old];
    }
    environ = merged;
    return 0;
}

int apphost_template_prepare(const char *const *placeholders, int count) {
    template_placeholder_count = 0;
    for (int index = 0; index < count && index < TEMPLATE_MAXIMUM_PLACEHOLDERS; index++) {
        char *value = getenv(placeholders[index]);
        if (!value) continue;
        template_placeholders[template_placeholder_count].name = placeholders[index];
        template_placeholders[template_placeholder_count].value = value;
        template_placeholders[template_placeholder_count].capacity = strlen(value);
        template_placeholder_count++;
    }
    // glibc hands the kernel the address of its record of the thread's tid (set_tid_address);
    // the kernel tells it back where checkpoint/restore is built in. Else it is looked for in
    // the first kilobyte of glibc's thread descriptor, where it is, and must be found once.
    pid_t tid = (pid_t)syscall(SYS_gettid);
    pid_t *address = NULL;
    if (prctl(PR_GET_TID_ADDRESS, &address, 0, 0, 0) == 0 && address && *address == tid) {
        template_tid_offset = (char *)address - (char *)pthread_self();
        return 0;
    }
    const pid_t *self = (const pid_t *)pthread_self();
    int found = 0;
    for (long index = 0; index < 1024 / (long)sizeof(pid_t); index++) {
        if (self[index] == tid) {
            template_tid_offset = index * (long)sizeof(pid_t);
            found++;
        }
    }
    if (found != 1) template_tid_offset = -1;
    return found == 1 ? 0 : -1;
}

int apphost_template_share_page_tables(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t capacity = 1 << 16, length = 0;
    char *maps = malloc(capacity + 1);
    while (maps) {
        if (length == capacity) {
            char *larger = realloc(maps, (capacity *= 2) + 1);
            if (!larger) free(maps);
            maps = larger;
            continue;
        }
        ssize_t got = read(fd, maps + length, capacity - length);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        length += (size_t)got;
    }
    close(fd);
    if (!maps) return -1;
    maps[length] = 0;
    int shared = 0;
    // Parsed whole before any change: an mprotect may split or merge what the file lists.
    for (char *line = maps, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        unsigned long start, end, inode;
        char permissions[5];
        if (sscanf(line, "%lx-%lx %4s %*s %*s %lu", &start, &end, permissions, &inode) != 4) continue;
        // Read-only private mappings of a file (a library's code and constants) have no
        // anonymous memory, so a fork leaves their page-table entries behind.
        if (inode == 0 || permissions[0] != 'r' || permissions[1] != '-' || permissions[3] != 'p') continue;
        int protection = PROT_READ | (permissions[2] == 'x' ? PROT_EXEC : 0);
        if (mprotect((void *)start, end - start, protection | PROT_WRITE) != 0) continue;
        // The same byte written back: a private copy of one page, and with it anonymous memory.
        volatile char *first = (volatile char *)start;
        *first = *first;
        if (mprotect((void *)start, end - start, protection) != 0) {
            free(maps);
            return -2;
        }
        shared++;
    }
    free(maps);
    return shared;
}

struct clone3_arguments {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/// A fork of the calling process as clone3 makes it (`flags` added; `exit_signal` 0 with
/// CLONE_PARENT; `cgroup` a cgroup v2 directory to start in, or -1). Unlike glibc's fork it
/// runs no atfork handler (the template is single-threaded and holds no lock), so the child's
/// copy of glibc's own record of its tid is written by the kernel (CLONE_CHILD_SETTID):
/// pthread_self() must name the child's thread, not the template's. Returns 0 in the child.
static pid_t fork_template(struct spawn_job *job, uint64_t exit_signal, uint64_t flags, int cgroup, int *pidfd) {
    struct clone3_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    arguments.flags = flags;
    arguments.exit_signal = exit_signal;
    if (template_tid_offset >= 0) {
        arguments.flags |= CLONE_CHILD_SETTID;
        arguments.child_tid = (uint64_t)(uintptr_t)((char *)pthread_self() + template_tid_offset);
    }
    if (pidfd) {
        arguments.flags |= CLONE_PIDFD;
        arguments.pidfd = (uint64_t)(uintptr_t)pidfd;
    }
    if (cgroup >= 0) {
        arguments.flags |= CLONE_INTO_CGROUP;
        arguments.cgroup = (uint64_t)cgroup;
    }
    job->step = "clone3";
    long pid = syscall(SYS_clone3, &arguments, sizeof arguments);
    if (pid < 0 && cgroup >= 0 && errno != ENOSYS && !job->require_cgroup) {
        // A group that cannot take it (gone, or a hierarchy without the feature): the host
        // moves the process into its groups itself, as for the exec launcher.
        arguments.flags &= ~CLONE_INTO_CGROUP;
        arguments.cgroup = 0;
        pid = syscall(SYS_clone3, &arguments, sizeof arguments);
    }
    if (pid > 0 && (arguments.flags & CLONE_INTO_CGROUP)) job->started_in_cgroup = 1;
    return (pid_t)pid;
}

/// The app process forked from the template, its descriptors in place: takes the app's
/// environment, unblocks every signal and becomes the app process. Never returns.
static void run_template_app(struct spawn_job *job) {
    if (fill_placeholders(job->envp) != 0) _exit(127);
    // libdispatch keeps the thread's tid in its thread-local data (the first field of
    // __dispatch_tsd), taken in the template: its locks name their owner by it.
    pid_t *dispatch_tid = dlsym(RTLD_DEFAULT, "__dispatch_tsd");
    if (dispatch_tid) *dispatch_tid = (pid_t)syscall(SYS_gettid);
    void (*dispatch_child)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "dispatch_atfork_child");
    if (dispatch_child) dispatch_child();
    // A fork of the namespace's init (a CLONE_VM child, which the kernel gives no restartable-
    // sequences area) registers glibc's own, as glibc does for each thread it starts.
    if (__rseq_size > 0) {
        syscall(SYS_rseq, (char *)pthread_self() + __rseq_offset, __rseq_size, 0, RSEQ_SIG);
    }
    environ = (char **)job->envp;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    job->app_main();
    _exit(127);
}

/// The app process, cloned by the init before the init execs: the init's descriptors but its
/// channel to the host, whose place the read end of the isolation report takes.
static int app_child(void *argument) {
    struct spawn_job *job = argument;
    job->step = "app process descriptors";
    if (dup2(job->report[0], job->count - 1) < 0) goto fail;
    if (syscall(SYS_close_range, job->count, ~0U, 0) != 0) goto fail;
    job->step = "execve the app process";
    exec_unblocked(job->app_path, job->app_argv, job->envp);
fail:
    job->error = errno;
    _exit(127);
}

/// In the init before it execs: starts the app process (pid 2), which therefore starts up
/// while the init execs and isolates the file system, and keeps the write end of the
/// isolation report on descriptor `count`.
static int start_app_process(struct spawn_job *job) {
    job->step = "isolation report";
    // A socket, not a pipe: a standby's init passes its mount namespace on it.
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, job->report) != 0) return -1;
    pid_t pid = job->app_main ? fork_template(job, SIGCHLD, 0, job->cgroup, NULL)
                              : clone(app_child, job->app_stack + SPAWN_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, job);
    if (pid == 0) {
        // The template's fork: pid 2 on a copy of this stack, sharing nothing with the init.
        if (dup2(job->report[0], job->count - 1) < 0 || syscall(SYS_close_range, job->count, ~0U, 0) != 0) _exit(127);
        run_template_app(job);
    }
    if (pid < 0 || job->error != 0) {
        if (job->error != 0) errno = job->error;
        return -1;
    }
    job->step = "isolation report";
    close(job->report[0]);
    if (job->report[1] == job->count) return fcntl(job->count, F_SETFD, 0);
    if (dup2(job->report[1], job->count) < 0) return -1;
    return close(job->report[1]);
}

/// What every started process does first: each signal handler back to its default (the
/// parent's must never run here; every signal is blocked meanwhile), the parent-death signal,
/// a process group of its own, and descriptor `fds[i]` as i, no other open.
static int prepare_child(struct spawn_job *job) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    for (int number = 1; number < _NSIG; number++) {
        if (number != SIGKILL && number != SIGSTOP) sigaction(number, &action, NULL);
    }
    job->step = "parent-death signal";
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
    job->step = "process group";
    if (setpgid(0, 0) != 0) return -1;
    // Each descriptor is first copied above the targets, so that no target overwrites a
    // source still to be placed.
    job->step = "descriptors";
    int moved[SPAWN_MAXIMUM_DESCRIPTORS];
    for (int index = 0; index < job->count; index++) {
        moved[index] = fcntl(job->fds[index], F_DUPFD_CLOEXEC, job->count);
        if (moved[index] < 0) return -1;
    }
    // The cgroup directory the app process is to start in, kept as descriptor count + 1.
    int cgroup = job->cgroup >= 0 ? fcntl(job->cgroup, F_DUPFD_CLOEXEC, job->count + 2) : -1;
    if (job->cgroup >= 0 && cgroup < 0) return -1;
    for (int index = 0; index < job->count; index++) {
        if (dup2(moved[index], index) < 0) return -1;
    }
    int keep = job->count;
    if (cgroup >= 0) {
        if (dup3(cgroup, job->count + 1, O_CLOEXEC) < 0) return -1;
        job->cgroup = job->count + 1;
        keep = job->count + 2;
        syscall(SYS_close_range, job->count, job->count, 0);
    }
    if (syscall(SYS_close_range, keep, ~0U, 0) != 0) {
        for (int fd = keep; fd < 65536; fd++) close(fd);
    }
    return 0;
}

static int spawn_child(void *argument) {
    struct spawn_job *job = argument;
    if ((job->namespaces & APPHOST_NAMESPACE_USER) && map_identity(job) != 0) goto fail;
    if (prepare_child(job) != 0) goto fail;
    if ((job->app_path || job->app_main) && start_app_process(job) != 0) goto fail;
    // After the app process has started: it must not inherit the capability.
    if ((job->namespaces & APPHOST_NAMESPACE_USER) && keep_mount_capability(job) != 0) goto fail;
    job->step = "execve";
    exec_unblocked(job->path, job->argv, job->envp);
fail:
    job->error = errno;
    _exit(127);
}

/// Runs `child` in a clone of the caller that shares its memory until it execs or exits (as
/// vfork), with every signal blocked meanwhile. Returns the child's pid, its pidfd in `*pidfd`.
static pid_t clone_sharing_memory(int (*child)(void *), void *job, int flags, int *pidfd, size_t size) {
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) return -1;
    // Below the stack, a page that faults: an overflow ends the process, never corrupts.
    mprotect(stack, 4096, PROT_NONE);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t pid = clone(child, (char *)stack + size, flags, job, pidfd);
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    munmap(stack, size);
    errno = saved;
    return pid;
}

pid_t apphost_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                    int namespaces, const char *app_path, char *const app_argv[], int *pidfd) {
    if (count < 0 || count > SPAWN_MAXIMUM_DESCRIPTORS || (app_path && (!namespaces || count < 1))) {
        errno = EINVAL;
        return -1;
    }
    struct spawn_job job;
    memset(&job, 0, sizeof job);
    job.cgroup = -1;
    job.path = path;
    job.argv = argv;
    job.envp = envp;
    job.fds = fds;
    job.count = count;
    job.namespaces = namespaces;
    job.app_path = app_path;
    job.app_argv = app_argv;
    if (app_path) {
        job.app_stack = mmap(NULL, SPAWN_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (job.app_stack == MAP_FAILED) return -1;
    }
    if (namespaces & APPHOST_NAMESPACE_USER) prepare_maps(&job);
    int fd = -1;
    pid_t pid = clone_sharing_memory(spawn_child, &job, clone_flags(namespaces), &fd, SPAWN_STACK_SIZE);
    int saved = errno;
    if (app_path) munmap(job.app_stack, SPAWN_STACK_SIZE);
    errno = saved;
    if (pid < 0) return -1;
    if (job.error != 0) {
        waitpid(pid, NULL, 0);
        close(fd);
        errno = job.error;
        return -1;
    }
    *pidfd = fd;
    return pid;
}

int apphost_clone3_available(void) {
    // Too small an argument: EINVAL (or E2BIG) where clone3 exists; ENOSYS where it does not,
    // EPERM where a policy refuses it.
    return syscall(SYS_clone3, NULL, 0) < 0 && (errno == EINVAL || errno == E2BIG) ? 1 : 0;
}

pid_t apphost_template_spawn(char *const envp[], const int *fds, int count, int namespaces, const char *init_path,
                             char *const init_argv[], int cgroup, int require_cgroup, void (*app_main)(void), int *pidfd,
                             int *started_in_cgroup) {
    if (count < 1 || count > SPAWN_MAXIMUM_DESCRIPTORS || !app_main || (namespaces && !init_path)) {
        errno = EINVAL;
        return -1;
    }
    struct spawn_job job;
    memset(&job, 0, sizeof job);
    job.envp = envp;
    job.fds = fds;
    job.count = count;
    job.namespaces = namespaces;
    job.app_main = app_main;
    job.cgroup = cgroup;
    job.require_cgroup = require_cgroup;
    if (namespaces) {
        // The init shares this memory until it execs (as apphost_spawn's does); the app process
        // it forks before that is a copy of this template, on a copy of the init's stack.
        job.path = init_path;
        job.argv = init_argv;
        if (namespaces & APPHOST_NAMESPACE_USER) prepare_maps(&job);
        int fd = -1;
        pid_t pid = clone_sharing_memory(spawn_child, &job, clone_flags(namespaces) | CLONE_PARENT, &fd, TEMPLATE_STACK_SIZE);
        if (pid < 0) return -1;
        *pidfd = fd;
        if (job.error != 0) {
            // The init failed before its exec: it is the host's child to reap, by this pidfd.
            errno = job.error;
            return -1;
        }
        *started_in_cgroup = job.started_in_cgroup;
        return pid;
    }
    // The app process itself, the host's child (CLONE_PARENT), as if the host had started it.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int fd = -1;
    pid_t pid = fork_template(&job, 0, CLONE_PARENT, cgroup, &fd);
    if (pid == 0) {
        job.cgroup = -1;
        if (prepare_child(&job) != 0) _exit(127);
        run_template_app(&job);
    }
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    errno = saved;
    if (pid < 0) return -1;
    *pidfd = fd;
    *started_in_cgroup = job.started_in_cgroup;
    return pid;
}

static int probe_child(void *argument) {
    struct spawn_job *job = argument;
    if ((job->namespaces & APPHOST_NAMESPACE_USER) && map_identity(job) != 0) goto fail;
    job->step = "mount propagation";
    if (apphost_mount_stop_propagation() != 0) goto fail;
    job->step = "mount /proc";
    if (apphost_mount_proc() != 0) goto fail;
    job->step = "mount_setattr";
    if (apphost_mount_set_read_only("/proc", 1) != 0) goto fail;
    _exit(0);
fail:
    job->error = errno;
    _exit(1);
}

int apphost_probe_namespaces(int namespaces, const char **step) {
    struct spawn_job job;
    memset(&job, 0, sizeof job);
    job.namespaces = namespaces;
    job.step = "clone";
    if (namespaces & APPHOST_NAMESPACE_USER) prepare_maps(&job);
    int fd = -1;
    pid_t pid = clone_sharing_memory(probe_child, &job, clone_flags(namespaces), &fd, SPAWN_STACK_SIZE);
    if (pid < 0) {
        *step = job.step;
        return -1;
    }
    waitpid(pid, NULL, 0);
    close(fd);
    if (job.error != 0) {
        *step = job.step;
        errno = job.error;
        return -1;
    }
    return 0;
}

static int apphost_mount_stop_propagation(void) { return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL); }

static int apphost_mount_bind(const char *source, const char *target) {
    return mount(source, target, NULL, MS_BIND | MS_REC, NULL);
}

static int apphost_mount_empty_directory(const char *path) {
    return mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k");
}

static int apphost_mount_set_read_only(const char *path, int read_only) {
    struct mount_attr attributes;
    memset(&attributes, 0, sizeof attributes);
    if (read_only) {
        attributes.attr_set = MOUNT_ATTR_RDONLY;
    } else {
        attributes.attr_clr = MOUNT_ATTR_RDONLY;
    }
    return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attributes, sizeof attributes);
}

static int apphost_mount_proc(void) { return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL); }

/// mountinfo's octal escapes (\040), undone in place.
static void unescape(char *text) {
    char *out = text;
    for (char *in = text; *in; ) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 4;
        } else {
            *out++ = *in++;
        }
    }
    *out = 0;
}

/// Whether the ext4 mount at `point`, from block device `major`:`minor`, is a container image
/// to detach: on a loop device (LOOP_MAJOR; any other device is passed by without a look-up in
/// /sys) backed by a file in a `storage/containers/` or `storage/groups/` directory, neither at
/// one of `keep` nor below `hidden/`.
static int is_other_container_image(unsigned major, unsigned minor, const char *point, const char *const *keep, int count,
                                    const char *hidden) {
    if (major != 7) return 0;
    char path[64], backing[1024];
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/loop/backing_file", major, minor);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t length = read(fd, backing, sizeof backing - 1);
    close(fd);
    if (length <= 0) return 0;
    backing[length] = 0;
    if (!strstr(backing, "/storage/containers/") && !strstr(backing, "/storage/groups/")) return 0;
    for (int index = 0; index < count; index++) {
        if (strcmp(point, keep[index]) == 0) return 0;
    }
    size_t prefix = hidden ? strlen(hidden) : 0;
    return !(hidden && strncmp(point, hidden, prefix) == 0 && point[prefix] == '/');
}

/// The most container images detached at once.
#define DETACH_MAXIMUM 64

/// listmount(2) and statmount(2) (Linux 6.8), declared here: Debian 12's headers predate them.
#if defined(__x86_64__) || defined(__aarch64__)
#define APPHOST_SYS_STATMOUNT 457
#define APPHOST_SYS_LISTMOUNT 458
#endif
struct apphost_mnt_id_req {
    uint32_t size, spare;
    uint64_t mnt_id, param;
};
struct apphost_statmount {
    uint32_t size, mnt_opts;
    uint64_t mask;
    uint32_t sb_dev_major, sb_dev_minor;
    uint64_t sb_magic;
    uint32_t sb_flags, fs_type;
    uint64_t mnt_id, mnt_parent_id;
    uint32_t mnt_id_old, mnt_parent_id_old;
    uint64_t mnt_attr, mnt_propagation, mnt_peer_group, mnt_master, propagate_from;
    uint32_t mnt_root, mnt_point;
    uint64_t mnt_ns_id, spare[49];
    char str[];
};
_Static_assert(sizeof(struct apphost_statmount) == 512, "statmount's fixed part is 512 bytes");

/// The container images to detach, found by listing the mounts with listmount and statmount:
/// no text to make and parse for each mount, as /proc/self/mountinfo is (0.2 ms here, on the
/// launch's path). Returns how many it stored in `points`, or -1 where the kernel has neither or
/// refuses one (then the mount table is read instead: no image may be passed over unseen).
static int other_container_images_listed(char points[][1024], const char *const *keep, int count, const char *hidden) {
#ifdef APPHOST_SYS_LISTMOUNT
    static uint64_t ids[1024];
    static union {
        struct apphost_statmount fields;
        char bytes[sizeof(struct apphost_statmount) + 1024];
    } status;
    int found = 0;
    uint64_t last = 0;
    for (;;) {
        struct apphost_mnt_id_req request = {.size = 24, .mnt_id = ~(uint64_t)0 /* LSMT_ROOT */, .param = last};
        long listed = syscall(APPHOST_SYS_LISTMOUNT, &request, ids, sizeof ids / sizeof ids[0], 0);
        if (listed < 0) return -1;
        for (long index = 0; index < listed && found < DETACH_MAXIMUM; index++) {
            // The device and file system first (0x1, STATMOUNT_SB_BASIC); the mount point
            // (0x10, STATMOUNT_MNT_POINT) only of an ext4 file system (0xEF53) on a loop device.
            // A mount gone since the listing (ENOENT) is passed by.
            struct apphost_mnt_id_req query = {.size = 24, .mnt_id = ids[index], .param = 0x1};
            if (syscall(APPHOST_SYS_STATMOUNT, &query, &status, sizeof status, 0) != 0) {
                if (errno == ENOENT) continue;
                return -1;
            }
            if (status.fields.sb_dev_major != 7 || status.fields.sb_magic != 0xEF53) continue;
            query.param = 0x1 | 0x10;
            if (syscall(APPHOST_SYS_STATMOUNT, &query, &status, sizeof status, 0) != 0) {
                if (errno == ENOENT) continue;
                return -1;
            }
            if (!(status.fields.mask & 0x10)) return -1;
            const char *point = status.fields.str + status.fields.mnt_point;
            if (is_other_container_image(status.fields.sb_dev_major, status.fields.sb_dev_minor, point, keep, count, hidden)) {
                snprintf(points[found++], 1024, "%s", point);
            }
        }
        if (listed < (long)(sizeof ids / sizeof ids[0])) return found;
        last = ids[listed - 1];
    }
#else
    (void)points, (void)keep, (void)count, (void)hidden;
    return -1;
#endif
}

/// The same from /proc/self/mountinfo, on kernels without listmount.
static int other_container_images_in_mountinfo(char points[][1024], const char *const *keep, int count, const char *hidden) {
    FILE *table = fopen("/proc/self/mountinfo", "re");
    if (!table) return -1;
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, table) && found < DETACH_MAXIMUM) {
        // "36 27 7:0 / /path rw,relatime shared:1 - ext4 /dev/loop0 rw"
        unsigned major, minor;
        char point[1024];
        if (sscanf(line, "%*u %*u %u:%u %*s %1023s", &major, &minor, point) != 3) continue;
        char *dash = strstr(line, " - ");
        if (!dash || strncmp(dash + 3, "ext4 ", 5) != 0) continue;
        unescape(point);
        if (is_other_container_image(major, minor, point, keep, count, hidden)) snprintf(points[found++], 1024, "%s", point);
    }
    fclose(table);
    return found;
}

static int apphost_detach_container_images(const char *const *keep, int count, const char *hidden) {
    static char points[DETACH_MAXIMUM][1024];
    int found = other_container_images_listed(points, keep, count, hidden);
    if (found < 0) found = other_container_images_in_mountinfo(points, keep, count, hidden);
    for (int index = 0; index < found; index++) umount2(points[index], MNT_DETACH);
    return found;
}

/// Writes "step path: error" into `failure`; returns -1 with errno kept.
static int isolation_failed(char *failure, size_t size, const char *step, const char *path) {
    int saved = errno;
    snprintf(failure, size, "%s%s%s: %s", step, path ? " " : "", path ? path : "", strerror(saved));
    errno = saved;
    return -1;
}

int apphost_path_is_below(const char *path, const char *top) {
    size_t length = top ? strlen(top) : 0;
    return top && strncmp(path, top, length) == 0 && path[length] == '/';
}

/// Makes the directories of `path` below `top` (an empty directory), `path` itself included.
static int make_directories(const char *path, const char *top) {
    char current[PATH_MAX];
    if (snprintf(current, sizeof current, "%s", path) >= (int)sizeof current) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *slash = current + strlen(top) + 1;; slash++) {
        slash = strchr(slash, '/');
        if (slash) *slash = 0;
        if (mkdir(current, 0755) != 0 && errno != EEXIST) return -1;
        if (!slash) return 0;
        *slash = '/';
    }
}

int apphost_isolate_prepare(const char *hidden, const char *const *keep, int keep_count, int *hidden_fd,
                            char *failure, size_t failure_size) {
    *hidden_fd = -1;
    if (apphost_mount_stop_propagation() != 0) return isolation_failed(failure, failure_size, "mount propagation", NULL);
    if (hidden) {
        // The paths below it that the app may see are opened from here once it is covered.
        *hidden_fd = open(hidden, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*hidden_fd < 0) return isolation_failed(failure, failure_size, "open", hidden);
        if (apphost_mount_empty_directory(hidden) != 0) return isolation_failed(failure, failure_size, "hide", hidden);
    }
    apphost_detach_container_images(keep, keep_count, hidden);
    if (apphost_mount_set_read_only("/", 1) != 0) return isolation_failed(failure, failure_size, "read-only", "/");
    if (apphost_mount_proc() != 0) return isolation_failed(failure, failure_size, "mount", "/proc");
    if (apphost_mount_set_read_only("/proc", 1) != 0) return isolation_failed(failure, failure_size, "read-only", "/proc");
    return 0;
}

/// `path` (relative) in the directory `directory` as it was before it was covered: the last
/// component never a link, and nothing that leads out of `directory` (openat2's
/// RESOLVE_BENEATH, Linux 5.6; where there is none, or a container's filter refuses it, a link
/// that leads out is followed, as open's was).
static int open_beneath(int directory, const char *path) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return fd;
    return openat(directory, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int apphost_isolate_show(const char *hidden, int hidden_fd, const char *const *writable, int writable_count,
                         const char *const *readable, int readable_count, char *failure, size_t failure_size) {
    if (writable_count < 0 || readable_count < 0 || writable_count + readable_count > APPHOST_ISOLATION_MAXIMUM_PATHS) {
        errno = E2BIG;
        return isolation_failed(failure, failure_size, "too many paths", NULL);
    }
    const char *kept[APPHOST_ISOLATION_MAXIMUM_PATHS];
    int kept_fds[APPHOST_ISOLATION_MAXIMUM_PATHS];
    int kept_count = 0, result = 0;
    for (int index = 0; index < writable_count + readable_count; index++) {
        const char *path = index < writable_count ? writable[index] : readable[index - writable_count];
        if (!apphost_path_is_below(path, hidden)) continue;
        int fd = open_beneath(hidden_fd, path + strlen(hidden) + 1);
        if (fd < 0) {
            result = isolation_failed(failure, failure_size, "open", path);
            goto done;
        }
        kept[kept_count] = path;
        kept_fds[kept_count++] = fd;
    }
    if (kept_count > 0) {
        // The cover is read-only, as every mount: its directories for the paths are made while
        // it is not, and each path is mounted on its own.
        if (apphost_mount_set_read_only(hidden, 0) != 0) {
            result = isolation_failed(failure, failure_size, "read-write", hidden);
            goto done;
        }
        for (int index = 0; index < kept_count; index++) {
            char source[32];
            snprintf(source, sizeof source, "/proc/self/fd/%d", kept_fds[index]);
            if (make_directories(kept[index], hidden) != 0) {
                result = isolation_failed(failure, failure_size, "mkdir", kept[index]);
                goto done;
            }
            if (apphost_mount_bind(source, kept[index]) != 0) {
                result = isolation_failed(failure, failure_size, "bind", kept[index]);
                goto done;
            }
        }
        if (apphost_mount_set_read_only(hidden, 1) != 0) {
            result = isolation_failed(failure, failure_size, "read-only", hidden);
            goto done;
        }
    }
    for (int index = 0; index < writable_count; index++) {
        if (!apphost_path_is_below(writable[index], hidden) && apphost_mount_bind(writable[index], writable[index]) != 0) {
            result = isolation_failed(failure, failure_size, "bind", writable[index]);
            goto done;
        }
        // A mount made from a read-only one is read-only: this one is the app's to write.
        if (apphost_mount_set_read_only(writable[index], 0) != 0) {
            result = isolation_failed(failure, failure_size, "read-write", writable[index]);
            goto done;
        }
    }
done:
    for (int index = 0; index < kept_count; index++) close(kept_fds[index]);
    return result;
}

int apphost_isolate_file_system(const char *hidden, const char *const *writable, int writable_count,
                                const char *const *readable, int readable_count, char *failure, size_t failure_size) {
    int hidden_fd = -1;
    int result = apphost_isolate_prepare(hidden, writable, writable_count, &hidden_fd, failure, failure_size);
    if (result == 0) {
        result = apphost_isolate_show(hidden, hidden_fd, writable, writable_count, readable, readable_count, failure, failure_size);
    }
    if (hidden_fd >= 0) {
        int saved = errno;
        close(hidden_fd);
        errno = saved;
    }
    return result;
}

int apphost_join_prepared_namespace(int fd) {
    char tag = 0;
    int passed = -1, count = 0;
    ssize_t got = apphost_template_receive(fd, &tag, 1, &passed, 1, &count);
    if (got <= 0 || tag != 'N' || passed < 0) {
        if (passed >= 0) close(passed);
        if (got >= 0) errno = got == 0 ? EPIPE : EPROTO;
        return -1;
    }
    int joined = setns(passed, CLONE_NEWNS);
    int saved = errno;
    close(passed);
    errno = saved;
    return joined;
}

int apphost_await_isolation(int fd, char *failure, size_t size, int *ruleset) {
    char report[1024];
    size_t have = 0;
    *ruleset = -1;
    // Until the init closes its end: the report may come in pieces, the ruleset with the first.
    while (have < sizeof report - 1) {
        int count = 0;
        ssize_t got = apphost_template_receive(fd, report + have, sizeof report - 1 - have, *ruleset < 0 ? ruleset : NULL, *ruleset < 0 ? 1 : 0, &count);
        if (got <= 0) break;
        have += (size_t)got;
    }
    report[have] = 0;
    if (have > 0 && report[0] == '0') return 0;
    if (*ruleset >= 0) close(*ruleset);
    *ruleset = -1;
    if (have > 0 && report[0] == '1') {
        snprintf(failure, size, "%s", report + 1);
        return 1;
    }
    return -1;
}
