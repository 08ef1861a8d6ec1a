#ifndef APPHOST_NAMESPACES_H
#define APPHOST_NAMESPACES_H

// Starting an app process in namespaces of its own, and what its init does inside them
// (docs/sandbox.md, "The sandbox"). Everything here that runs in a child between clone and execve, or in
// the namespace's init, makes system calls only: no allocation, no locks.

#include <sys/types.h>
#include <stdint.h>

/// A new PID namespace and a new mount namespace.
#define APPHOST_NAMESPACE_PID_AND_MOUNT 1
/// Also a new user namespace, mapping the caller's uid and gid to themselves (a host that is
/// not root needs one to create the other two).
#define APPHOST_NAMESPACE_USER 2
/// With APPHOST_NAMESPACE_PID_AND_MOUNT: the mount namespace is not made at the start but by the
/// init once it runs (apphost-init --standby), which passes it to the app process; the app
/// process joins it before its launch (apphost_join_prepared_namespace).
#define APPHOST_NAMESPACE_MOUNT_LATER 4

/// Starts `path` (argv, envp) as posix_spawn would, from the calling thread: descriptor
/// `fds[i]` becomes descriptor i for i < `count` and every other is closed; every signal
/// has its default action and none is blocked; the process leads its own process group and
/// receives SIGKILL when the calling thread ends. With `namespaces` (the flags above) it starts
/// in new namespaces, as the init (pid 1) of its PID namespace, and with `app_path` it first
/// starts the app process (`app_path`, `app_argv`, envp) as pid 2, its child, so that both
/// start up at once: the app process has the init's descriptors but the last
/// (`count` - 1), in whose place it has one end of a socket pair whose other end the init has as
/// descriptor `count` (apphost-init reports the file system's isolation on it). Stores a pidfd
/// of the started process in `*pidfd`. Returns its pid, or -1 and errno (the child's, if it
/// failed before execve).
pid_t apphost_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                    int namespaces, const char *app_path, char *const app_argv[], int *pidfd);

/// In the launch template (docs/launching.md, "How apps are launched"): before the first
/// apphost_template_spawn, while single-threaded. Records where the template's environment
/// holds the value of each variable of `placeholders` (`count`, at most 16): CoreFoundation
/// keeps pointers to the values of HOME, TMPDIR, the XDG directories and a few more, read once
/// at its start-up, so the host starts the template with a long placeholder for each, and each
/// fork writes its app's value over those bytes before app code runs (as well as setting its
/// environment). Also finds where glibc records the calling thread's tid, so that each fork's
/// copy names its own (and each fork corrects libdispatch's copy, and registers glibc's
/// restartable-sequences area where it has none). Returns 0, or -1 if the tid's record was not
/// found: the template must then not fork (mutex owners would name the template's thread).
int apphost_template_prepare(const char *const *placeholders, int count);

/// Makes `variables` (NAME=value, NULL-terminated) the process's environment, over what it
/// had of the same names (a process made ahead of its launch learns its container from its
/// configuration); in a fork of the launch template, over its placeholders too. Returns 0, or
/// -1 and errno (ENAMETOOLONG: a value longer than its placeholder).
int apphost_template_take_environment(char *const variables[]);

/// In a standby app process whose init makes its mount namespace (APPHOST_NAMESPACE_MOUNT_LATER):
/// reads the init's 'N' on `fd`, the namespace passed with it, and joins it (setns, which needs
/// the capabilities its launch's confinement drops). Reads that one byte only: the isolation
/// report follows on the same socket. Returns 0, or -1 and errno (EPIPE: the init ended first).
int apphost_join_prepared_namespace(int fd);

/// In the app process: waits for its init's report on `fd` (apphost-init): '0' isolated, with
/// the app's Landlock ruleset made (`*ruleset`, -1 where the kernel has no Landlock), for the
/// runner to enforce; '1' and why not. Returns 0 once isolated, 1 with the failure in
/// `failure`, -1 if the init ended without a report.
int apphost_await_isolation(int fd, char *failure, size_t size, int *ruleset);

/// In the launch template, once warmed up and before its first fork: gives each read-only
/// private file mapping (the code and constants of the runtime, Foundation and every other
/// library) a private copy of its first page, so that the kernel copies the mapping's page-table
/// entries to each fork, as it does for anonymous memory, instead of leaving every page the
/// template has touched to fault in again in each app process. Returns how many mappings it
/// changed; -1 if /proc/self/maps cannot be read (nothing changed); -2 if a mapping could not
/// be made read-only again (the template must then not fork).
int apphost_template_share_page_tables(void);

/// The longest value a placeholder takes (the host makes each this long).
#define APPHOST_TEMPLATE_PLACEHOLDER_LENGTH 4095

/// Whether the kernel has clone3 (Linux 5.3), which the launch template forks with.
int apphost_clone3_available(void);

/// In the launch template, a single-threaded process that has loaded the Swift runtime and
/// Foundation: starts an app process as a fork of itself that sets `envp` as its environment
/// and calls `app_main` (which never returns), with descriptors as apphost_spawn places them.
/// The started process is the template's parent's child (CLONE_PARENT), so the host waits for
/// it and its parent-death signal fires with the host's spawn thread, as with apphost_spawn.
/// Without `namespaces`, that is the app process itself; with them, it is the init (`init_path`,
/// `init_argv`), which forks the app process as pid 2 before it execs, as apphost_spawn's init
/// starts `app_path`. The app process starts in the cgroup v2 directory `cgroup` where it is
/// not -1 and the kernel can (CLONE_INTO_CGROUP), else outside it, or with `require_cgroup` not
/// at all; the init is in none of the app's groups. Stores a pidfd in `*pidfd` and whether the
/// process started in `cgroup` in `*started_in_cgroup`; returns the pid, or -1 and errno (with a
/// pidfd in `*pidfd` if an init was started and failed before its exec: the host's child to reap).
pid_t apphost_template_spawn(char *const envp[], const int *fds, int count, int namespaces, const char *init_path,
                             char *const init_argv[], int cgroup, int require_cgroup, void (*app_main)(void), int *pidfd,
                             int *started_in_cgroup);

/// Whether this kernel and user can give an app the namespaces of `namespaces`: makes them
/// in a short-lived child that mounts a /proc for its PID namespace and makes a mount
/// read-only, as the init will. Returns 0, or -1 and errno with `*step` naming what failed.
int apphost_probe_namespaces(int namespaces, const char **step);

/// The most paths `apphost_isolate_file_system` takes, writable and readable together.
#define APPHOST_ISOLATION_MAXIMUM_PATHS 64
/// The most Landlock rules the host may ask an init for (--landlock-read, --landlock-write).
#define APPHOST_LANDLOCK_MAXIMUM_RULES 192

/// In the app's new mount namespace (its init calls this, while the runner starts up): no mount
/// propagates to or from the namespace it was copied from; `hidden` (the host's state
/// directory, with every app's container; may be NULL) is covered by an empty directory in
/// which only the paths of `writable` and `readable` below it appear again (mounted from
/// the directory as it was before it was covered, never through a last link, never out of it); other hosts' container
/// images are detached; every mount is read-only except `writable`; /proc is a new, read-only
/// /proc of the caller's PID namespace. Returns 0, or -1 and errno with "what path: error" in
/// `failure`. It is apphost_isolate_prepare, then apphost_isolate_show.
int apphost_isolate_file_system(const char *hidden, const char *const *writable, int writable_count,
                                const char *const *readable, int readable_count, char *failure, size_t failure_size);

/// The part of apphost_isolate_file_system that names no app, which a standby's init does
/// before its launch (apphost-init --standby --hide DIR): stops propagation, covers `hidden`,
/// detaches other hosts' container images (those mounted at the `keep_count` paths of `keep`
/// or below `hidden` stay), makes every mount read-only and mounts the read-only /proc.
/// `*hidden_fd` is then `hidden` as it was before it was covered (O_PATH), or -1 without
/// `hidden`; the caller closes it, whether this fails or not.
int apphost_isolate_prepare(const char *hidden, const char *const *keep, int keep_count, int *hidden_fd,
                            char *failure, size_t failure_size);

/// Whether `path` is strictly below the directory `top` (false when `top` is NULL).
int apphost_path_is_below(const char *path, const char *top);

/// The app's part, in a namespace apphost_isolate_prepare made: the paths of `writable` and
/// `readable` below `hidden` appear again, opened from `hidden_fd`; `writable` are read-write.
int apphost_isolate_show(const char *hidden, int hidden_fd, const char *const *writable, int writable_count,
                         const char *const *readable, int readable_count, char *failure, size_t failure_size);

/// How the app process ended, as the namespace's init (apphost-init) writes it for the host.
struct apphost_exit_record {
    int32_t code;   // CLD_EXITED, CLD_KILLED or CLD_DUMPED
    int32_t status; // exit status or signal number
};

#endif
