#define _GNU_SOURCE
#include "apphost_storage.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/syscall.h>
// linux/fs.h (fsxattr, the MS_ flags) and glibc's sys/mount.h clash on glibc 2.36: mount and
// umount2 are called through syscall(2) instead.
#include <linux/fs.h>
#include <linux/loop.h>

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef MNT_DETACH
#define MNT_DETACH 2
#endif
#ifndef UMOUNT_NOFOLLOW
#define UMOUNT_NOFOLLOW 8
#endif
#ifndef PRJQUOTA
#define PRJQUOTA 2
#endif

static void set_name(struct loop_info64 *info, const char *name) {
    if (name) strncpy((char *)info->lo_file_name, name, LO_NAME_SIZE - 1);
}

int apphost_loop_attach(int backing_fd, const char *name, int *index) {
    int control = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) return -1;
    for (int attempt = 0; attempt < 64; attempt++) {
        int number = ioctl(control, LOOP_CTL_GET_FREE);
        if (number < 0) break;
        char path[32];
        snprintf(path, sizeof path, "/dev/loop%d", number);
        int loop = open(path, O_RDWR | O_CLOEXEC);
        if (loop < 0) break;
        struct loop_config config;
        memset(&config, 0, sizeof config);
        config.fd = (uint32_t)backing_fd;
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        set_name(&config.info, name);
        if (ioctl(loop, LOOP_CONFIGURE, &config) == 0) {
            close(control);
            *index = number;
            return loop;
        }
        if (errno == EINVAL || errno == ENOTTY) {
            // Before Linux 5.8: two steps; autoclear is set by the second.
            if (ioctl(loop, LOOP_SET_FD, backing_fd) == 0) {
                struct loop_info64 info;
                memset(&info, 0, sizeof info);
                info.lo_flags = LO_FLAGS_AUTOCLEAR;
                set_name(&info, name);
                if (ioctl(loop, LOOP_SET_STATUS64, &info) == 0) {
                    close(control);
                    *index = number;
                    return loop;
                }
                int saved = errno;
                ioctl(loop, LOOP_CLR_FD, 0);
                errno = saved;
            }
        }
        int saved = errno;
        close(loop);
        errno = saved;
        // Taken by another process since LOOP_CTL_GET_FREE: ask for the next free one.
        if (saved != EBUSY) break;
    }
    int saved = errno;
    close(control);
    errno = saved;
    return -1;
}

int apphost_mount_ext4_on(const char *source, int target_fd, unsigned long flags, const char *options) {
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", target_fd);
    return (int)syscall(SYS_mount, source, target, "ext4", flags, options);
}

unsigned long apphost_mount_flags_container(void) { return MS_NOSUID | MS_NODEV; }

int apphost_unmount(const char *path, int detach) {
    return (int)syscall(SYS_umount2, path, UMOUNT_NOFOLLOW | (detach ? MNT_DETACH : 0));
}

int apphost_syncfs(int fd) { return syncfs(fd); }

int apphost_flush_file_system(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    // Freezing writes out every dirty page and checkpoints the journal: the image is whole on
    // disk. Where it cannot freeze, the data at least.
    int result = ioctl(fd, FIFREEZE, 0) == 0 ? ioctl(fd, FITHAW, 0) : syncfs(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return result;
}

/// quotactl_fd where the kernel has it, else quotactl on the device.
static int quota_call(int fd, const char *device, int command, uint32_t id, void *address) {
    long result = syscall(SYS_quotactl_fd, fd, QCMD(command, PRJQUOTA), id, address);
    if (result == -1 && errno == ENOSYS && device) {
        result = quotactl(QCMD(command, PRJQUOTA), device, (int)id, (caddr_t)address);
    }
    return (int)result;
}

int apphost_project_quota_info(int fd, const char *device) {
    struct dqinfo info;
    memset(&info, 0, sizeof info);
    return quota_call(fd, device, Q_GETINFO, 0, &info);
}

int apphost_project_quota_get(int fd, const char *device, uint32_t id, uint64_t *used_bytes, uint64_t *limit_bytes, uint64_t *inodes) {
    struct dqblk block;
    memset(&block, 0, sizeof block);
    if (quota_call(fd, device, Q_GETQUOTA, id, &block) != 0) return -1;
    *used_bytes = block.dqb_curspace;
    *limit_bytes = block.dqb_bhardlimit * 1024;  // in QIF_DQBLKSIZE units
    *inodes = block.dqb_curinodes;
    return 0;
}

int apphost_project_quota_set_limit(int fd, const char *device, uint32_t id, uint64_t limit_bytes) {
    struct dqblk block;
    memset(&block, 0, sizeof block);
    block.dqb_bhardlimit = (limit_bytes + 1023) / 1024;
    block.dqb_bsoftlimit = 0;
    block.dqb_valid = QIF_BLIMITS;
    return quota_call(fd, device, Q_SETQUOTA, id, &block);
}

int apphost_file_project(int fd, uint32_t *id, int *inherit) {
    struct fsxattr attributes;
    memset(&attributes, 0, sizeof attributes);
    if (ioctl(fd, FS_IOC_FSGETXATTR, &attributes) != 0) return -1;
    *id = attributes.fsx_projid;
    *inherit = (attributes.fsx_xflags & FS_XFLAG_PROJINHERIT) != 0;
    return 0;
}

int apphost_set_file_project(int fd, uint32_t id, int inherit) {
    struct fsxattr attributes;
    memset(&attributes, 0, sizeof attributes);
    if (ioctl(fd, FS_IOC_FSGETXATTR, &attributes) != 0) return -1;
    attributes.fsx_projid = id;
    if (inherit) attributes.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    return ioctl(fd, FS_IOC_FSSETXATTR, &attributes);
}

long apphost_copy_file_range(int in_fd, int out_fd, size_t length) {
    return syscall(SYS_copy_file_range, in_fd, NULL, out_fd, NULL, length, 0);
}
