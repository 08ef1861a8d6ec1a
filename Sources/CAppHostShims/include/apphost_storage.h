#ifndef APPHOST_STORAGE_H
#define APPHOST_STORAGE_H

// What the host's storage limits need from the kernel and Swift's Glibc module does not import:
// loop-device ioctls (ioctl is variadic), mount(2), project quotas (quotactl_fd and the
// fsxattr ioctls). Each wrapper returns -1 and sets errno on failure, like libc.

#include <stdint.h>
#include <sys/types.h>

/// Attaches `backing_fd` (an open image file) to a free loop device with LO_FLAGS_AUTOCLEAR, so
/// that the device detaches itself when its last user (the mount) goes: LOOP_CTL_GET_FREE on
/// /dev/loop-control, then LOOP_CONFIGURE (Linux 5.8), else LOOP_SET_FD and LOOP_SET_STATUS64.
/// A device another process takes between the two steps is skipped. Returns the loop device's
/// descriptor (close-on-exec) and stores its number in `*index`.
int apphost_loop_attach(int backing_fd, const char *name, int *index);

/// mount(source, "/proc/self/fd/TARGET_FD", "ext4", flags, options): mounts on exactly the
/// directory `target_fd` is open on, whatever its path has become since.
int apphost_mount_ext4_on(const char *source, int target_fd, unsigned long flags, const char *options);

/// MS_NOSUID | MS_NODEV: no set-user-id binary and no device node works in a container.
unsigned long apphost_mount_flags_container(void);

/// umount2(path, UMOUNT_NOFOLLOW | (detach ? MNT_DETACH : 0))
int apphost_unmount(const char *path, int detach);
/// Writes the file system mounted at `path` out to its device whole (FIFREEZE then FITHAW:
/// dirty pages and the journal's checkpoint; syncfs where it cannot freeze), so that its image
/// is right on disk even while another mount namespace still holds it mounted.
int apphost_flush_file_system(const char *path);

/// syncfs(fd): everything written to the file system `fd` is on is on its device.
int apphost_syncfs(int fd);

/// copy_file_range(2) from the current offsets of both files: the kernel copies, nothing passes
/// through the caller's memory. Returns the bytes copied, 0 at the end, or -1 with errno.
long apphost_copy_file_range(int in_fd, int out_fd, size_t length);

/// Project quotas of the file system `fd` is on, through quotactl_fd (Linux 5.14), else
/// quotactl on `device` (the file system's block device; may be NULL).
/// Q_GETINFO for PRJQUOTA: 0 when project quotas are on, -1 (ESRCH: off) otherwise.
int apphost_project_quota_info(int fd, const char *device);
/// Q_GETQUOTA for project `id`: the bytes its files use and its hard limit in bytes (0: none).
int apphost_project_quota_get(int fd, const char *device, uint32_t id, uint64_t *used_bytes, uint64_t *limit_bytes, uint64_t *inodes);
/// Q_SETQUOTA for project `id`: its hard limit on space, in bytes (rounded up to KiB).
int apphost_project_quota_set_limit(int fd, const char *device, uint32_t id, uint64_t limit_bytes);

/// FS_IOC_FSGETXATTR: the project id of the file `fd` is open on, and whether new entries of a
/// directory inherit it (FS_XFLAG_PROJINHERIT).
int apphost_file_project(int fd, uint32_t *id, int *inherit);
/// FS_IOC_FSSETXATTR: sets the project id (and, for a directory, FS_XFLAG_PROJINHERIT).
int apphost_set_file_project(int fd, uint32_t id, int inherit);

#endif
