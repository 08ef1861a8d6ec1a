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
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
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

/// Reads a unix_diag_msg's attributes into `entry`.
static void read_unix_diag(struct nlmsghdr *header, struct apphost_unix_socket *entry) {
    struct unix_diag_msg *socket_message = NLMSG_DATA(header);
    entry->inode = socket_message->udiag_ino;
    int attributes = (int)(header->nlmsg_len - NLMSG_LENGTH(sizeof *socket_message));
    for (struct rtattr *attribute = (void *)(socket_message + 1); RTA_OK(attribute, attributes); attribute = RTA_NEXT(attribute, attributes)) {
        if (attribute->rta_type == UNIX_DIAG_PEER) {
            memcpy(&entry->peer, RTA_DATA(attribute), sizeof entry->peer);
        } else if (attribute->rta_type == UNIX_DIAG_VFS) {
            struct unix_diag_vfs vfs;
            memcpy(&vfs, RTA_DATA(attribute), sizeof vfs);
            entry->device = makedev(vfs.udiag_vfs_dev >> 20, vfs.udiag_vfs_dev & 0xfffff);
            entry->inode_of_path = vfs.udiag_vfs_ino;
        }
    }
    entry->connected = socket_message->udiag_state == TCP_ESTABLISHED;
}

/// Whether a listener's UNIX_DIAG_ICONS (the sockets its not yet accepted connections come
/// from) name the socket `inode`.
static bool has_pending_connection_from(struct nlmsghdr *header, uint32_t inode) {
    struct unix_diag_msg *socket_message = NLMSG_DATA(header);
    int attributes = (int)(header->nlmsg_len - NLMSG_LENGTH(sizeof *socket_message));
    for (struct rtattr *attribute = (void *)(socket_message + 1); RTA_OK(attribute, attributes); attribute = RTA_NEXT(attribute, attributes)) {
        if (attribute->rta_type != UNIX_DIAG_ICONS) continue;
        size_t count = RTA_PAYLOAD(attribute) / sizeof(uint32_t);
        for (size_t index = 0; index < count; index++) {
            uint32_t pending;
            memcpy(&pending, (char *)RTA_DATA(attribute) + index * sizeof pending, sizeof pending);
            if (pending == inode) return true;
        }
    }
    return false;
}

/// Opens a NETLINK_SOCK_DIAG socket and sends a Unix-socket request for UDIAG_SHOW_PEER,
/// UDIAG_SHOW_VFS and `show`: a dump of every socket in `states` (`inode` 0), or the one socket
/// with `inode`. Returns the socket, or -1 and errno.
static int request_unix_diag(uint32_t inode, uint32_t states, uint32_t show) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST | (inode == 0 ? NLM_F_DUMP : 0);
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = inode == 0 ? states : 0;
    message.request.udiag_ino = inode;
    message.request.udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_VFS | show;
    // An exact request names the socket by its inode alone: no cookie to check.
    if (inode != 0) message.request.udiag_cookie[0] = message.request.udiag_cookie[1] = ~0U;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// Sends a dump request for the Unix-domain sockets in `states` (UDIAG_SHOW_PEER, UDIAG_SHOW_VFS
/// and `show`) and calls `visit` with each socket's message until it returns true. Returns 0
/// when the dump is done or `visit` stopped it, or -1 and errno.
static int dump_unix_diag(uint32_t states, uint32_t show, bool (*visit)(struct nlmsghdr *, void *), void *context) {
    int fd = request_unix_diag(0, states, show);
    if (fd < 0) return -1;
    long buffer[4096];
    for (;;) {
        ssize_t length = recv(fd, buffer, sizeof buffer, 0);
        if (length < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (length == 0) break;
        int remaining = (int)length;
        for (struct nlmsghdr *header = (void *)buffer; NLMSG_OK(header, remaining); header = NLMSG_NEXT(header, remaining)) {
            if (header->nlmsg_type == NLMSG_ERROR) {
                struct nlmsgerr *error = NLMSG_DATA(header);
                close(fd);
                errno = -error->error;
                return -1;
            }
            if (header->nlmsg_type == NLMSG_DONE || visit(header, context)) {
                close(fd);
                return 0;
            }
        }
    }
    close(fd);
    return 0;
}

/// The sockets a dump has listed so far (`apphost_list_unix_sockets`).
struct unix_socket_list {
    struct apphost_unix_socket *sockets;
    int capacity;
    int count;
};

static bool add_unix_socket(struct nlmsghdr *header, void *context) {
    struct unix_socket_list *list = context;
    struct apphost_unix_socket entry = {0};
    read_unix_diag(header, &entry);
    if (list->count < list->capacity) list->sockets[list->count] = entry;
    list->count++;
    return false;
}

int apphost_list_unix_sockets(struct apphost_unix_socket *sockets, int capacity) {
    struct unix_socket_list list = {.sockets = sockets, .capacity = capacity};
    return dump_unix_diag(~0U, 0, add_unix_socket, &list) < 0 ? -1 : list.count;
}

/// What `apphost_find_unix_listener_with_pending` looks for, and the listener once found.
struct pending_search {
    uint32_t inode;
    struct apphost_unix_socket *listener;
    bool found;
};

static bool find_pending(struct nlmsghdr *header, void *context) {
    struct pending_search *search = context;
    if (!has_pending_connection_from(header, search->inode)) return false;
    memset(search->listener, 0, sizeof *search->listener);
    read_unix_diag(header, search->listener);
    search->found = true;
    return true;
}

int apphost_find_unix_listener_with_pending(uint32_t inode, struct apphost_unix_socket *listener) {
    struct pending_search search = {.inode = inode, .listener = listener};
    if (dump_unix_diag(1U << TCP_LISTEN, UDIAG_SHOW_ICONS, find_pending, &search) < 0) return -1;
    if (search.found) return 0;
    errno = ENOENT;
    return -1;
}

int apphost_find_unix_socket(uint32_t inode, struct apphost_unix_socket *socket_entry) {
    int fd = request_unix_diag(inode, 0, 0);
    if (fd < 0) return -1;
    long buffer[1024];
    ssize_t length;
    do { length = recv(fd, buffer, sizeof buffer, 0); } while (length < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (length < 0) {
        errno = saved;
        return -1;
    }
    struct nlmsghdr *header = (void *)buffer;
    if (!NLMSG_OK(header, (int)length)) {
        errno = EPROTO;
        return -1;
    }
    if (header->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *error = NLMSG_DATA(header);
        errno = error->error ? -error->error : ENOENT;
        return -1;
    }
    memset(socket_entry, 0, sizeof *socket_entry);
    read_unix_diag(header, socket_entry);
    return 0;
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
