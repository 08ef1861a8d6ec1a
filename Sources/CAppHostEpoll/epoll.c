#include "apphost_epoll.h"

#include <sys/epoll.h>

int apphost_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int apphost_epoll_add(int epoll, int fd, uint64_t key) {
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = key};
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

int apphost_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0); }

int apphost_epoll_wait(int epoll, uint64_t *keys, int capacity) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, events, capacity, -1);
    for (int index = 0; index < count; index++) keys[index] = events[index].data.u64;
    return count;
}
