#ifndef APPHOST_CRASH_H
#define APPHOST_CRASH_H

// The app process's crash and watchdog handlers (crash.c), and the record they send the host.
//
// The runner installs them before it loads the plugin. On a crash (SIGILL, SIGTRAP, SIGABRT,
// SIGBUS, SIGFPE, SIGSEGV) the crashing thread captures its own backtrace on an alternate
// signal stack, sends it to the host on the diagnostics socket, waits (bounded) for the host to
// have read the process's memory map, and dies of the same signal. On the host's sample signal
// the main thread sends its backtrace and carries on (the host kills it next: a watchdog).
// Everything the handlers do is async-signal-safe: no allocation, no locks of libc's, only
// system calls and the unwinder of libgcc (which finds unwind tables with _dl_find_object).
//
// The record is raw addresses only: the host symbolizes them against the memory map it reads
// itself. It is the app process's own account (app code could send one too); the host never
// decides how an app ended from it.

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// "ABT1", little-endian: the first field of every record.
#define APPHOST_CRASH_MAGIC 0x31544241u
/// The most frames a record carries; deeper stacks are cut (`truncated`).
#define APPHOST_CRASH_MAXIMUM_FRAMES 128
/// The diagnostics socket (SOCK_SEQPACKET) in the app process.
#define APPHOST_CRASH_FD 4
/// The real-time signal by which the host asks for the main thread's backtrace.
#define APPHOST_CRASH_SAMPLE_SIGNAL 61
/// How long a crashing thread waits for the host to have read its memory map, in ms: long
/// enough for a host on a loaded machine (a second was not, with every core busy).
#define APPHOST_CRASH_ACKNOWLEDGEMENT_TIMEOUT_MS 5000

enum apphost_crash_kind {
    /// A thread crashed: the record is its backtrace, the signal what it died of.
    APPHOST_CRASH_KIND_CRASH = 1,
    /// The answer to the host's sample signal: the main thread's backtrace.
    APPHOST_CRASH_KIND_SAMPLE = 2,
};

enum apphost_crash_unwinder {
    /// The unwind tables (.eh_frame), through the signal frame.
    APPHOST_CRASH_UNWINDER_TABLES = 1,
    /// The frame-pointer chain from the interrupted context (the tables gave nothing).
    APPHOST_CRASH_UNWINDER_FRAME_POINTERS = 2,
};

/// One record: one datagram of exactly this size. Frame 0 is the interrupted instruction;
/// the others are return addresses.
struct apphost_crash_record {
    uint32_t magic;
    uint32_t kind;
    int32_t signal;
    /// siginfo's si_code, and si_addr (the faulting address of SIGSEGV and SIGBUS).
    int32_t code;
    uint64_t address;
    /// The thread, as the app process sees it (gettid), whether it is the main thread, and its name.
    int32_t thread;
    uint32_t is_main;
    char thread_name[16];
    uint32_t unwinder;
    uint32_t truncated;
    uint32_t frame_count;
    uint32_t reserved;
    uint64_t frames[APPHOST_CRASH_MAXIMUM_FRAMES];
};

/// Installs the handlers, with an alternate signal stack for the calling (main) thread, and
/// makes `fd` (the diagnostics socket) close on exec. Returns 0, or -1 with errno.
int apphost_crash_install(int fd);

#ifdef __cplusplus
}
#endif

#endif
