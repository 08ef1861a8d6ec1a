// The machine's Unix-domain sockets, from the kernel's sock_diag interface (NETLINK_SOCK_DIAG):
// an exact look-up by inode, a dump, and the listener a connection not yet accepted waits on.
// The 0xdead10cc check (SharedResources.swift) matches what a frozen app holds against them.
#include "apphost_shims.h"
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>

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
