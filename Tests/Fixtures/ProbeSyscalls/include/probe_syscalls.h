#ifndef PROBE_SYSCALLS_H
#define PROBE_SYSCALLS_H

// Raw system calls the Probe fixture tries against its sandbox. Each returns 0 (or a count) on
// success and -errno on failure, so the probe can record exactly what the kernel answered.

#include <stddef.h>
#include <stdint.h>

int probe_socket(int family, int type);
/// socket(AF_INET, SOCK_STREAM) bound to 127.0.0.1:0 and listening.
int probe_listen(void);
int probe_ptrace_attach(int pid);
int probe_mount(void);
int probe_unshare(unsigned long flags);
int probe_bpf(void);
/// ioctl(fd, request) through the raw syscall, so high bits of `request` reach the kernel.
int probe_ioctl(int fd, uint64_t request);
/// fork; the child exits at once and is reaped.
int probe_fork(void);
int probe_execve(const char *path);
int probe_kill(int pid, int sig);
int probe_open(const char *path, int flags);
/// pthread_create and join.
int probe_thread(void);
/// Forks children that wait forever until fork fails; returns how many it made (>= 0) and
/// stores the failing errno in *error.
int probe_fork_bomb(int *error);

/// Locks the whole file open on `fd`: kind 0 flock, 1 POSIX (F_SETLK), 2 OFD (F_OFD_SETLK);
/// `exclusive` for a write lock. Returns 0 or -errno.
int probe_lock(int fd, int kind, int exclusive);
/// Releases a lock taken by probe_lock.
int probe_unlock(int fd, int kind);
/// socket(AF_UNIX) connected to `path`; returns the fd or -errno.
int probe_connect_unix(const char *path);

/// eventfd(initial, EFD_CLOEXEC): the descriptor or -errno.
int probe_eventfd(unsigned int initial);
/// A system call through the i386 ABI (int 0x80) and the x32 ABI, on x86_64: -ENOSYS elsewhere.
int probe_int80(long number);
int probe_x32(long number);
/// Creates a file and chmods it to `mode`; opens with `mode`: 0 or -errno.
int probe_chmod_new(const char *path, unsigned int mode);
int probe_open_mode(const char *path, int flags, unsigned int mode);

/// Changes of an existing file's metadata, which Landlock does not govern: 0 or -errno.
int probe_chmod(const char *path, unsigned int mode);
int probe_chown(const char *path, unsigned int uid, unsigned int gid);
int probe_touch(const char *path);
int probe_setxattr(const char *path);
/// Forks a child that calls setsid and forks a grandchild; both name themselves `name` and
/// sleep until killed. Returns the child's pid or -errno.
int probe_spawn_orphans(const char *name);
/// Forks a child that opens /proc/self/status and exits with 0 or the errno. Returns what the
/// child exited with (0 or an errno) or -errno.
int probe_child_reads_own_proc(void);
/// Runs `path` (fork, execv) with its standard output on a pipe; stores what it printed (NUL
/// terminated, at most `capacity` - 1 bytes) in `output`. Returns its exit status or -errno.
int probe_run_capturing(const char *path, char *output, int capacity);

#endif
