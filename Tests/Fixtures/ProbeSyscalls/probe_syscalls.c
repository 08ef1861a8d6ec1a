#define _GNU_SOURCE
#include "probe_syscalls.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/un.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <sys/xattr.h>
#include <unistd.h>

static int result(long value) { return value < 0 ? -errno : (int)value; }

int probe_socket(int family, int type) {
    int fd = socket(family, type, 0);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

int probe_listen(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -errno;
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = 0 };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int status = 0;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0 || listen(fd, 1) != 0) status = -errno;
    close(fd);
    return status;
}

int probe_ptrace_attach(int pid) { return result(ptrace(PTRACE_ATTACH, pid, 0, 0)); }
int probe_mount(void) { return result(mount("none", "/mnt", "tmpfs", 0, NULL)); }
int probe_unshare(unsigned long flags) { return result(unshare((int)flags)); }
int probe_bpf(void) { return result(syscall(SYS_bpf, 0, NULL, 0)); }

int probe_ioctl(int fd, uint64_t request) {
    char c = 'x';
    return result(syscall(SYS_ioctl, fd, request, &c));
}

int probe_fork(void) {
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return 0;
}

int probe_execve(const char *path) {
    char *const argv[] = { (char *)path, NULL };
    char *const envp[] = { NULL };
    return result(execve(path, argv, envp));
}

int probe_kill(int pid, int sig) { return result(kill(pid, sig)); }

int probe_open(const char *path, int flags) {
    int fd = open(path, flags | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

static void *nothing(void *argument) { return argument; }

int probe_thread(void) {
    pthread_t thread;
    int error = pthread_create(&thread, NULL, nothing, NULL);
    if (error != 0) return -error;
    return -pthread_join(thread, NULL);
}

int probe_fork_bomb(int *error) {
    int count = 0;
    for (;;) {
        pid_t pid = fork();
        if (pid < 0) {
            *error = errno;
            return count;
        }
        if (pid == 0) {
            for (;;) pause();
        }
        count++;
    }
}

int probe_lock(int fd, int kind, int exclusive) {
    if (kind == 0) return result(flock(fd, exclusive ? LOCK_EX | LOCK_NB : LOCK_SH | LOCK_NB));
    struct flock lock = {.l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return result(fcntl(fd, kind == 1 ? F_SETLK : F_OFD_SETLK, &lock));
}

int probe_unlock(int fd, int kind) {
    if (kind == 0) return result(flock(fd, LOCK_UN));
    struct flock lock = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return result(fcntl(fd, kind == 1 ? F_SETLK : F_OFD_SETLK, &lock));
}

int probe_connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, path, sizeof address.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int probe_eventfd(unsigned int initial) { return result(eventfd(initial, EFD_CLOEXEC)); }

int probe_int80(long number) {
#if defined(__x86_64__)
    long result;
    // The i386 system call entry: the filter must not let it past the native (x86_64) rules.
    __asm__ volatile("int $0x80" : "=a"(result) : "a"(number) : "memory");
    return result < 0 ? (int)result : 0;
#else
    (void)number;
    return -ENOSYS;
#endif
}

int probe_x32(long number) {
#if defined(__x86_64__)
    long result = syscall(number | 0x40000000L);
    return result < 0 ? -errno : 0;
#else
    (void)number;
    return -ENOSYS;
#endif
}

int probe_chmod_new(const char *path, unsigned int mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    close(fd);
    return chmod(path, mode) == 0 ? 0 : -errno;
}

int probe_open_mode(const char *path, int flags, unsigned int mode) {
    int fd = open(path, flags | O_CLOEXEC, mode);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

int probe_chmod(const char *path, unsigned int mode) { return result(chmod(path, mode)); }

int probe_chown(const char *path, unsigned int uid, unsigned int gid) { return result(chown(path, uid, gid)); }

int probe_touch(const char *path) { return result(utimensat(AT_FDCWD, path, NULL, 0)); }

int probe_setxattr(const char *path) { return result(setxattr(path, "user.apphost-probe", "x", 1, 0)); }

static void sleep_named(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
    for (;;) sleep(1000);
}

int probe_spawn_orphans(const char *name) {
    pid_t child = fork();
    if (child < 0) return -errno;
    if (child == 0) {
        setsid();
        if (fork() == 0) sleep_named(name);
        sleep_named(name);
    }
    return child;
}

int probe_child_reads_own_proc(void) {
    pid_t child = fork();
    if (child < 0) return -errno;
    if (child == 0) {
        int fd = open("/proc/self/status", O_RDONLY);
        _exit(fd < 0 ? errno : 0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) < 0) return -errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

int probe_run_capturing(const char *path, char *output, int capacity) {
    int fds[2];
    if (pipe(fds) != 0) return -errno;
    pid_t child = fork();
    if (child < 0) return -errno;
    if (child == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *const argv[] = {(char *)path, NULL};
        execv(path, argv);
        _exit(127);
    }
    close(fds[1]);
    int length = 0;
    for (;;) {
        ssize_t got = read(fds[0], output + length, (size_t)(capacity - 1 - length));
        if (got > 0 && length + got < capacity - 1) { length += (int)got; continue; }
        if (got > 0) length += (int)got;
        if (got < 0 && errno == EINTR) continue;
        break;
    }
    output[length] = 0;
    close(fds[0]);
    int status = 0;
    if (waitpid(child, &status, 0) < 0) return -errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
