#define _GNU_SOURCE
#include "apphost_shims.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// LANDLOCK_ACCESS_FS_* bits: execute, write a file, read a file, read a directory, then the
// rights that change a directory (1 << 4 to 1 << 12), refer (ABI 2), truncate (ABI 3) and ioctl
// on a device (ABI 5).
#define EXECUTE (1ull << 0)
#define WRITE_FILE (1ull << 1)
#define READ_FILE (1ull << 2)
#define READ_DIRECTORY (1ull << 3)
#define TRUNCATE (1ull << 14)
#define IOCTL_DEVICE (1ull << 15)
/// The rights that apply to a file (the others only to a directory).
#define FILE_RIGHTS (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEVICE)

/// The kernel's Landlock ABI, asked once.
static int landlock_abi(void) {
    static int abi = 0;
    if (abi == 0) abi = apphost_landlock_abi_version();
    return abi;
}

static uint64_t handled_rights(int abi) {
    uint64_t rights = (1ull << 13) - 1;
    if (abi >= 2) rights |= 1ull << 13;
    if (abi >= 3) rights |= TRUNCATE;
    if (abi >= 5) rights |= IOCTL_DEVICE;
    return rights;
}

int apphost_landlock_create(void) {
    int abi = landlock_abi();
    if (abi <= 0) {
        // Said again at every call: the version's errno is long overwritten.
        errno = EOPNOTSUPP;
        return -1;
    }
    struct apphost_landlock_ruleset_attr attributes = { handled_rights(abi), 0, 0 };
    size_t size = 8;
    if (abi >= 6) {
        // Signals and abstract Unix sockets, only within the domain (LANDLOCK_SCOPE_*).
        attributes.scoped = 1 | 2;
        size = 24;
    }
    return apphost_landlock_create_ruleset(&attributes, size);
}

int apphost_landlock_add(int ruleset, const char *path, int writable, uint64_t *device, uint64_t *inode) {
    int abi = landlock_abi();
    if (abi <= 0) {
        errno = EOPNOTSUPP;
        return -1;
    }
    uint64_t handled = handled_rights(abi);
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == EACCES ? 1 : -1;
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    uint64_t allowed = writable ? handled : EXECUTE | READ_FILE | READ_DIRECTORY;
    if (!S_ISDIR(info.st_mode)) allowed &= FILE_RIGHTS;
    int added = apphost_landlock_allow_beneath(ruleset, allowed & handled, fd);
    int saved = errno;
    close(fd);
    errno = saved;
    if (added != 0) return -1;
    *device = (uint64_t)info.st_dev;
    *inode = (uint64_t)info.st_ino;
    return 0;
}
