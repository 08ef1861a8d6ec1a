#define _GNU_SOURCE
#include "apphost_shims.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <grp.h>
#include <sys/socket.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/eventfd.h>

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

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

int apphost_landlock_create_ruleset(const struct apphost_landlock_ruleset_attr *attr, size_t size) {
    return (int)syscall(SYS_landlock_create_ruleset, attr, size, 0u);
}

struct apphost_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int apphost_landlock_allow_beneath(int ruleset, uint64_t allowed_access, int parent_fd) {
    struct apphost_landlock_path_beneath_attr rule = { allowed_access, parent_fd };
    return (int)syscall(SYS_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0u);
}

int apphost_landlock_restrict_self(int ruleset) {
    return (int)syscall(SYS_landlock_restrict_self, ruleset, 0u);
}

int apphost_switch_user(uid_t uid, gid_t gid, size_t group_count, const gid_t *groups) {
    if (setgroups(group_count, groups) != 0) return -1;
    if (setresgid(gid, gid, gid) != 0) return -1;
    return setresuid(uid, uid, uid);
}

int apphost_set_keep_capabilities(int keep) {
    return prctl(PR_SET_KEEPCAPS, keep, 0, 0, 0);
}

ssize_t apphost_send_with_fd(int socket, const void *bytes, size_t length, int fd) {
    return apphost_send_with_fds(socket, bytes, length, &fd, 1);
}

/// The descriptors a received message carries, into `fds` (at most `capacity`; the rest closed).
static void take_descriptors(struct msghdr *message, int *fds, int capacity, int *count) {
    for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header; header = CMSG_NXTHDR(message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
            if (*count < capacity) fds[(*count)++] = fd; else close(fd);
        }
    }
}

ssize_t apphost_receive_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count) {
    struct iovec io = { bytes, length };
    union { char buffer[CMSG_SPACE(sizeof(int) * 8)]; struct cmsghdr align; } control;
    struct msghdr message = { 0 };
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof(control.buffer);
    *count = 0;
    ssize_t received = recvmsg(socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (received < 0) return received;
    take_descriptors(&message, fds, capacity, count);
    return received;
}

ssize_t apphost_template_receive(int socket, void *bytes, size_t length, int *fds, int capacity, int *count) {
    struct iovec io = { bytes, length };
    union { char buffer[CMSG_SPACE(sizeof(int) * 8)]; struct cmsghdr align; } control;
    struct msghdr message = { 0 };
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof(control.buffer);
    *count = 0;
    ssize_t received;
    do {
        received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return received;
    take_descriptors(&message, fds, capacity, count);
    // A request cut short, or with more descriptors than the control buffer holds, is refused.
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (int i = 0; i < *count; i++) close(fds[i]);
        *count = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return received;
}

ssize_t apphost_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count) {
    if (count < 0 || count > 8) {
        errno = EINVAL;
        return -1;
    }
    struct iovec io = { (void *)bytes, length };
    union { char buffer[CMSG_SPACE(sizeof(int) * 8)]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = { 0 };
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

#ifndef SECCOMP_FILTER_FLAG_TSYNC_ESRCH
#define SECCOMP_FILTER_FLAG_TSYNC_ESRCH (1UL << 4)
#endif

int apphost_seccomp_install(const void *instructions, unsigned short count, int listener) {
    struct sock_fprog program = { count, (struct sock_filter *)instructions };
    unsigned long flags = SECCOMP_FILTER_FLAG_TSYNC;
    if (listener) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
}

static void store(struct apphost_open_file *files, int capacity, int *count, int fd, const struct stat *info) {
    if (*count < capacity) {
        files[*count].fd = fd;
        files[*count].mode = info->st_mode;
        files[*count].device = info->st_dev;
        files[*count].inode = info->st_ino;
    }
    (*count)++;
}

/// The size of the descriptor table of `pid` (FDSize in /proc/PID/status): above its highest
/// open descriptor, and at most about twice it. -1 if unknown.
static int descriptor_table_size(pid_t pid) {
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[4096];
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0) return -1;
    text[length] = 0;
    char *field = strstr(text, "\nFDSize:");
    return field ? atoi(field + 8) : -1;
}

/// fstat of a copy of each descriptor, taken with pidfd_getfd slot by slot: about 0.7 µs a
/// descriptor, half the cost of resolving its /proc/PID/fd link, and no directory to list.
/// -2 where the kernel or the permissions do not allow it, or the table is huge.
static int list_by_copying(pid_t pid, struct apphost_open_file *files, int capacity) {
    int size = descriptor_table_size(pid);
    if (size <= 0 || size > 4096) return -2;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) return -2;
    int count = 0;
    for (int fd = 0; fd < size; fd++) {
        int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (copy < 0) {
            if (errno == EBADF) continue;  // an empty slot
            close(pidfd);
            return -2;
        }
        struct stat info;
        int known = fstat(copy, &info) == 0;
        close(copy);
        if (known) store(files, capacity, &count, fd, &info);
    }
    close(pidfd);
    return count;
}

int apphost_list_open_files(pid_t pid, struct apphost_open_file *files, int capacity) {
    int copied = list_by_copying(pid, files, capacity);
    if (copied >= 0) return copied;
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    int directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) return -1;
    int count = 0;
    char buffer[16384];
    for (;;) {
        long length = syscall(SYS_getdents64, directory, buffer, sizeof buffer);
        if (length < 0) {
            int saved = errno;
            close(directory);
            errno = saved;
            return -1;
        }
        if (length == 0) break;
        for (long offset = 0; offset < length;) {
            struct linux_dirent64 {
                uint64_t d_ino;
                int64_t d_off;
                unsigned short d_reclen;
                unsigned char d_type;
                char d_name[];
            } *entry = (void *)(buffer + offset);
            offset += entry->d_reclen;
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            // Past capacity, only count: the caller calls again with room for all.
            if (count >= capacity) {
                count++;
                continue;
            }
            struct stat info;
            // A descriptor closed since the listing is simply gone.
            if (fstatat(directory, entry->d_name, &info, 0) == 0) store(files, capacity, &count, atoi(entry->d_name), &info);
        }
    }
    close(directory);
    return count;
}

int apphost_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

uint64_t apphost_makedev(unsigned int major, unsigned int minor) { return makedev(major, minor); }

int apphost_peer_uid(int fd, uint32_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    return 0;
}

int apphost_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

int apphost_open_directory_path(const char *path) { return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC); }
