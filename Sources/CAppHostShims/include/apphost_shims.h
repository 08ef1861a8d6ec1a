#ifndef APPHOST_SHIMS_H
#define APPHOST_SHIMS_H

// Syscalls and macros that Swift's Glibc module does not import (variadic prctl, siginfo_t
// unions, GNU-only declarations). Each wrapper returns -1 and sets errno on failure, like libc.

#include <sys/types.h>
#include <sys/resource.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
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

/// struct landlock_ruleset_attr as of ABI 6 (newer than Debian 12's headers). Pass the size the
/// kernel's ABI knows: 8 bytes before ABI 4, 16 before ABI 6, 24 from ABI 6.
struct apphost_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
/// landlock_create_ruleset(attr, size, 0)
int apphost_landlock_create_ruleset(const struct apphost_landlock_ruleset_attr *attr, size_t size);
/// landlock_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, {allowed, parent_fd}, 0)
int apphost_landlock_allow_beneath(int ruleset, uint64_t allowed_access, int parent_fd);
/// landlock_restrict_self(ruleset, 0)
int apphost_landlock_restrict_self(int ruleset);
/// A ruleset that handles every file access right this kernel's Landlock knows and, from ABI 6,
/// scopes signals and abstract Unix sockets to its domain (landlock.c). Returns its descriptor,
/// or -1 with errno (ENOSYS or EOPNOTSUPP: no Landlock here).
int apphost_landlock_create(void);
/// Allows `path` in `ruleset` (opened with O_PATH, so a link is followed: the rule names what
/// it resolves to): reading, executing and listing beneath it, or every right if `writable`; a
/// file gets the rights that apply to files. Returns 0 with the file's device and inode; 1 if it
/// is missing or out of the caller's reach (ENOENT, EACCES: no rule is needed); -1 and errno.
int apphost_landlock_add(int ruleset, const char *path, int writable, uint64_t *device, uint64_t *inode);

/// setresuid, setresgid and setgroups, which Swift's Glibc module hides.
int apphost_switch_user(uid_t uid, gid_t gid, size_t group_count, const gid_t *groups);
/// sendmsg of `length` bytes with `fd` attached (SCM_RIGHTS) to the first byte. Returns the bytes
/// sent, or -1.
ssize_t apphost_send_with_fd(int socket, const void *bytes, size_t length, int fd);
/// recvmsg(MSG_DONTWAIT | MSG_CMSG_CLOEXEC) into `bytes`, storing up to `capacity` received
/// descriptors in `fds` and their number in `*count` (descriptors beyond it are closed).
ssize_t apphost_receive_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count);
/// apphost_receive_with_fds, but blocking (through EINTR), and a message cut short (MSG_TRUNC or
/// MSG_CTRUNC) is refused with EMSGSIZE, its descriptors closed: the launch template's read.
ssize_t apphost_template_receive(int socket, void *bytes, size_t length, int *fds, int capacity, int *count);
/// sendmsg of `bytes` with `count` (at most 8) descriptors as SCM_RIGHTS, MSG_NOSIGNAL.
ssize_t apphost_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count);
/// seccomp(SECCOMP_SET_MODE_FILTER, TSYNC [| NEW_LISTENER | TSYNC_ESRCH], {count, instructions}):
/// installs a compiled classic-BPF filter on every thread. Returns the listener fd when
/// `listener` is set, else 0; -1 and errno on failure.
int apphost_seccomp_install(const void *instructions, unsigned short count, int listener);
/// prctl(PR_SET_KEEPCAPS, keep)
int apphost_set_keep_capabilities(int keep);

/// One open descriptor of a process, as stat(2) of /proc/PID/fd/FD sees its target.
struct apphost_open_file {
    int fd;
    uint32_t mode;
    uint64_t device;
    uint64_t inode;
};
/// Lists the open descriptors of `pid` and what each refers to: fstat of a copy of each slot of
/// its table taken with pidfd_getfd (about 0.7 µs a descriptor), or where that is not allowed,
/// fstatat on each entry of /proc/PID/fd (about 1.6 µs). Returns how many there are, which may exceed
/// `capacity` (only `capacity` are stored: call again with more room); -1 and errno on failure.
int apphost_list_open_files(pid_t pid, struct apphost_open_file *files, int capacity);

/// One Unix-domain socket on the machine, from the kernel's sock_diag interface.
struct apphost_unix_socket {
    uint32_t inode;
    /// The socket at the other end of a connection, 0 if none.
    uint32_t peer;
    /// The socket file it is bound to (or, for an accepted connection, its listener's), as
    /// stat(2) reports st_dev and st_ino; both 0 if it has none.
    uint64_t device;
    uint64_t inode_of_path;
    /// Connected (TCP_ESTABLISHED). A connected stream socket with `peer` 0 is waiting on a
    /// listener's queue: the listener has not accepted it, and the socket that will stand for
    /// it there has no inode until it does (see `apphost_find_unix_listener_with_pending`).
    bool connected;
};
/// Lists the machine's Unix-domain sockets (NETLINK_SOCK_DIAG dump with UDIAG_SHOW_PEER and
/// UDIAG_SHOW_VFS). Returns how many there are, which may exceed `capacity`; -1 and errno on
/// failure.
int apphost_list_unix_sockets(struct apphost_unix_socket *sockets, int capacity);
/// The Unix-domain socket with this inode (an exact NETLINK_SOCK_DIAG request, not a dump: a
/// dump of a machine whose sockets come and go may skip one). Returns 0, or -1 and errno
/// (ENOENT: no such socket, or it is gone).
int apphost_find_unix_socket(uint32_t inode, struct apphost_unix_socket *socket);
/// The listening Unix-domain socket whose queue holds a connection from the socket `inode` that
/// it has not accepted yet, from its UNIX_DIAG_ICONS (a dump of the machine's listeners only:
/// the one link the kernel gives between a pending connection and its listener). Returns 0, or
/// -1 and errno (ENOENT: no listener has it pending, as when it has been accepted).
int apphost_find_unix_listener_with_pending(uint32_t inode, struct apphost_unix_socket *listener);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)
int apphost_eventfd(void);
/// makedev(major, minor): a device number as stat(2) reports it.
uint64_t apphost_makedev(unsigned int major, unsigned int minor);

/// The uid of the process at the other end of a connected Unix socket (SO_PEERCRED).
/// Returns 0, or -1 and errno.
int apphost_peer_uid(int fd, uint32_t *uid);
/// accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)
int apphost_accept(int fd);
/// open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)
int apphost_open_directory_path(const char *path);

#endif
