#ifndef APPHOST_EPOLL_H
#define APPHOST_EPOLL_H

#include <stdint.h>

// epoll for the host's control-socket reader (AppHostRuntime's ControlReader): Swift's Glibc
// module does not bring sys/epoll.h, and struct epoll_event is packed on x86-64. Each
// registration carries a key, never the descriptor.

/// epoll_create1(EPOLL_CLOEXEC)
int apphost_epoll_create(void);
/// epoll_ctl(EPOLL_CTL_ADD) of `fd` for EPOLLIN, level-triggered, carrying `key`.
int apphost_epoll_add(int epoll, int fd, uint64_t key);
/// epoll_ctl(EPOLL_CTL_DEL)
int apphost_epoll_remove(int epoll, int fd);
/// epoll_wait, blocking: the keys of up to `capacity` ready registrations. Returns their count,
/// or -1 with errno.
int apphost_epoll_wait(int epoll, uint64_t *keys, int capacity);

#endif
