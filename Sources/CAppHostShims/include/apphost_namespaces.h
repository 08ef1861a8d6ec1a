#ifndef APPHOST_NAMESPACES_H
#define APPHOST_NAMESPACES_H

// Starting an app process in namespaces of its own, and what its runner does inside them
// (DESIGN.md, Sandbox). Everything here that runs in a child between clone and execve, or in
// the namespace's init, makes system calls only: no allocation, no locks.

#include <sys/types.h>
#include <stdint.h>

/// A new PID namespace and a new mount namespace.
#define APPHOST_NAMESPACE_PID_AND_MOUNT 1
/// Also a new user namespace, mapping the caller's uid and gid to themselves (a host that is
/// not root needs one to create the other two).
#define APPHOST_NAMESPACE_USER 2

/// Starts `path` (argv, envp) as posix_spawn would, from the calling thread: descriptor
/// `fds[i]` becomes descriptor i for i < `count` and every other is closed; every signal
/// has its default action and none is blocked; the process leads its own process group and
/// receives SIGKILL when the calling thread ends. With `namespaces` (the flags above) it starts
/// in new namespaces, as the init (pid 1) of its PID namespace. Stores a pidfd of it in
/// `*pidfd`. Returns its pid, or -1 and errno (the child's, if it failed before execve).
pid_t apphost_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                    int namespaces, int *pidfd);

/// Whether this kernel and user can give an app the namespaces of `namespaces`: makes them
/// in a short-lived child that mounts a /proc for its PID namespace and makes a mount
/// read-only, as the runner will. Returns 0, or -1 and errno with `*step` naming what failed.
int apphost_probe_namespaces(int namespaces, const char **step);

/// mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL): no mount made here reaches the namespace
/// this one was copied from, and none made there later (read-write) reaches this one.
int apphost_mount_stop_propagation(void);
/// mount(source, target, NULL, MS_BIND | MS_REC, NULL): `source` (which may be
/// /proc/self/fd/N) is mounted at `target` too.
int apphost_mount_bind(const char *source, const char *target);
/// mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k"): an
/// empty directory over `path`, hiding what it holds.
int apphost_mount_empty_directory(const char *path);
/// mount_setattr(AT_FDCWD, path, AT_RECURSIVE, MOUNT_ATTR_RDONLY set or cleared): the mount at
/// `path` and every mount below it become read-only (or read-write again).
int apphost_mount_set_read_only(const char *path, int read_only);
/// Detaches (MNT_DETACH) every ext4 mount whose loop device's backing file is in a
/// `storage/containers/` or `storage/groups/` directory (an apphost host's container image),
/// except at `keep` (`count` paths) and below `hidden/`. Returns how many it detached.
int apphost_detach_container_images(const char *const *keep, int count, const char *hidden);
/// mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL): a /proc of the
/// caller's PID namespace, over the one it had (read-write: make it read-only after).
int apphost_mount_proc(void);

/// How the app process ended, as the namespace's init (apphost-init) writes it for the host.
struct apphost_exit_record {
    int32_t code;   // CLD_EXITED, CLD_KILLED or CLD_DUMPED
    int32_t status; // exit status or signal number
};

#endif
