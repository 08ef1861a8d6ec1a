#define _GNU_SOURCE
#include "apphost_crash.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

// Everything below runs in signal handlers of a process that may be corrupt: system calls,
// reads of its own stack and libgcc's unwinder only. Why each choice is made:
// - The unwind tables first: they step through the signal frame and through glibc, which keeps
//   no frame pointers (a thread blocked in sleep or a lock, abort). Swift code keeps frame
//   pointers, so the chain of them is the fallback, bounded by the thread's stack.
// - A fault while capturing (a corrupt stack) re-enters the handler: the process then dies at
//   once of the signal it first crashed with, so the host reports the crash it really had.
// - The crashing thread waits for the host's acknowledgement: the host reads the memory map
//   while the process still exists, which it needs to name the images.

/// Where the glibc stack of the main thread begins (ld.so exports it): no frame lies above it.
extern void *__libc_stack_end;

static int diagnostics_fd = -1;
/// The app process, and its main thread (the same number). A child it forks inherits the
/// handlers but is not the app process: it dies of its signal without a record.
static pid_t app_process;
static pid_t main_thread;
/// The thread writing a crash record, and the signal it crashed with.
static _Atomic pid_t crashing_thread;
static volatile sig_atomic_t first_signal;
/// The thread answering the sample signal.
static _Atomic pid_t sampling_thread;

static const int crash_signals[] = {SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV};
/// The alternate stack: the unwinder needs a few KiB per frame state, a stack overflow none left.
/// Static (untouched pages cost nothing until a signal comes), so installing makes no mmap.
#define ALTERNATE_STACK_SIZE (64 * 1024)
static char alternate_stack[ALTERNATE_STACK_SIZE] __attribute__((aligned(16)));

static pid_t current_thread(void) { return (pid_t)syscall(SYS_gettid); }

struct unwind_state {
    uint64_t *frames;
    uint32_t count;
    uint32_t skipped;
    uint32_t truncated;
    int found;
    uintptr_t pc;
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *context, void *argument) {
    struct unwind_state *state = argument;
    int before = 0;
    uintptr_t ip = _Unwind_GetIPInfo(context, &before);
    if (ip == 0) return _URC_END_OF_STACK;
    if (!state->found) {
        // The handler's own frames and the signal trampoline come first; the interrupted
        // thread's frames begin at the instruction it was interrupted at.
        if (ip != state->pc) return ++state->skipped > 32 ? _URC_END_OF_STACK : _URC_NO_REASON;
        state->found = 1;
    }
    if (state->count == APPHOST_CRASH_MAXIMUM_FRAMES) {
        state->truncated = 1;
        return _URC_END_OF_STACK;
    }
    state->frames[state->count++] = ip;
    return _URC_NO_REASON;
}

/// The highest address a frame of the current thread can be at, or `sp` where it is unknown.
static uintptr_t stack_top(uintptr_t sp) {
    if (current_thread() == main_thread) return (uintptr_t)__libc_stack_end;
    // glibc puts a thread's descriptor at the top of the stack it allocates for it.
    uintptr_t self = (uintptr_t)pthread_self();
    return sp < self ? self : sp;
}

static uint32_t walk_frame_pointers(const ucontext_t *context, uint64_t *frames, uint32_t *truncated) {
    uintptr_t sp = (uintptr_t)context->uc_mcontext.gregs[REG_RSP];
    uintptr_t fp = (uintptr_t)context->uc_mcontext.gregs[REG_RBP];
    uintptr_t top = stack_top(sp);
    uint32_t count = 0;
    frames[count++] = (uint64_t)context->uc_mcontext.gregs[REG_RIP];
    while (fp >= sp && fp % 8 == 0 && fp + 16 <= top) {
        const uintptr_t *frame = (const uintptr_t *)fp;
        if (frame[1] == 0) break;
        if (count == APPHOST_CRASH_MAXIMUM_FRAMES) {
            *truncated = 1;
            break;
        }
        frames[count++] = frame[1];
        sp = fp + 16;
        fp = frame[0];
    }
    return count;
}

static void capture(struct apphost_crash_record *record, uint32_t kind, int number, const siginfo_t *info, const ucontext_t *context) {
    memset(record, 0, sizeof *record);
    record->magic = APPHOST_CRASH_MAGIC;
    record->kind = kind;
    record->signal = number;
    record->code = info ? info->si_code : 0;
    if (info && (number == SIGSEGV || number == SIGBUS || number == SIGILL || number == SIGFPE || number == SIGTRAP)) {
        record->address = (uint64_t)(uintptr_t)info->si_addr;
    }
    record->thread = current_thread();
    record->is_main = record->thread == main_thread;
    prctl(PR_GET_NAME, record->thread_name, 0, 0, 0);
    struct unwind_state state = {.frames = record->frames, .pc = (uintptr_t)context->uc_mcontext.gregs[REG_RIP]};
    _Unwind_Backtrace(unwind_step, &state);
    if (state.count > 1) {
        record->unwinder = APPHOST_CRASH_UNWINDER_TABLES;
        record->frame_count = state.count;
        record->truncated = state.truncated;
    } else {
        record->unwinder = APPHOST_CRASH_UNWINDER_FRAME_POINTERS;
        record->frame_count = walk_frame_pointers(context, record->frames, &record->truncated);
    }
}

static void send_record(const struct apphost_crash_record *record) {
    while (send(diagnostics_fd, record, sizeof *record, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR) {}
}

/// Ends the process by `number` with its default action (a core dump where the kernel makes one).
static void die(int number) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(number, &action, NULL);
    syscall(SYS_tgkill, getpid(), current_thread(), number);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, number);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    // A fault that the signal above did not end re-executes and faults again, by default now.
}

static void crash_handler(int number, siginfo_t *info, void *context) {
    pid_t self = current_thread();
    if (getpid() != app_process || atomic_load(&sampling_thread) == self) {
        // A forked child, or the sampler itself faulted on a corrupt stack (the host is killing
        // the app anyway): no record.
        die(number);
        return;
    }
    pid_t expected = 0;
    if (!atomic_compare_exchange_strong(&crashing_thread, &expected, self)) {
        if (expected == self) {
            die(first_signal);
            return;
        }
        // Another thread is reporting its crash; the process ends with it.
        for (;;) pause();
    }
    first_signal = number;
    struct apphost_crash_record record;
    capture(&record, APPHOST_CRASH_KIND_CRASH, number, info, context);
    // Acknowledgements of records the app sent itself must not pass for the host's answer.
    char drain[16];
    while (recv(diagnostics_fd, drain, sizeof drain, MSG_DONTWAIT) > 0) {}
    send_record(&record);
    struct pollfd ready = {.fd = diagnostics_fd, .events = POLLIN};
    if (poll(&ready, 1, APPHOST_CRASH_ACKNOWLEDGEMENT_TIMEOUT_MS) == 1) (void)recv(diagnostics_fd, drain, sizeof drain, MSG_DONTWAIT);
    die(number);
}

static void sample_handler(int number, siginfo_t *info, void *context) {
    int saved = errno;
    pid_t self = current_thread();
    if (getpid() != app_process) {
        // A forked child was not asked.
    } else if (self != main_thread) {
        // A process-directed signal may land on any thread: the main thread is the one asked for.
        syscall(SYS_tgkill, getpid(), main_thread, number);
    } else {
        atomic_store(&sampling_thread, self);
        struct apphost_crash_record record;
        capture(&record, APPHOST_CRASH_KIND_SAMPLE, number, info, context);
        send_record(&record);
        atomic_store(&sampling_thread, 0);
    }
    errno = saved;
}

int apphost_crash_install(int fd) {
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return -1;
    diagnostics_fd = fd;
    app_process = getpid();
    main_thread = current_thread();
    stack_t alternate = {.ss_sp = alternate_stack, .ss_size = ALTERNATE_STACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&alternate, NULL) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_sigaction = crash_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (size_t index = 0; index < sizeof crash_signals / sizeof crash_signals[0]; index++) {
        if (sigaction(crash_signals[index], &action, NULL) != 0) return -1;
    }
    action.sa_sigaction = sample_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    return sigaction(APPHOST_CRASH_SAMPLE_SIGNAL, &action, NULL);
}
