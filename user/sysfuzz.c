/* A user program for the tests: makes COUNT (argv[2], default 2000)
   system calls with random numbers and arguments from a seeded generator
   (argv[1]): the numbers the kernel implements and others, arguments
   drawn from zero, small and huge integers, -1, pointers into its own
   stack and heap, unmapped, kernel and unaligned addresses. Calls that
   would end or block it for good are steered: no exit, exit_group, fork,
   vfork, clone or wait4; futex only wakes and requeues, or waits with a
   timeout; sleeps and polls are short; pipes and the terminal are
   non-blocking, and reads of the terminal read /dev/null; memory calls aim at an arena of their own (or at addresses
   outside the user half), not at its code, data and stack. A call may still make this program fault (munmap of its own
   stack, say): that ends only it. The kernel must answer everything with
   a result or an errno and never panic. Prints how many calls it made. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

static uint64_t state;

static uint64_t next(void) { /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
}

static char scratch[8192];
enum { ARENA_PAGES = 64 };
static char *arena;

static long argument(void) {
    switch (next() % 12) {
    case 0: return 0;
    case 1: return (long)(next() % 16);
    case 2: return -1;
    case 3: return (long)next();
    case 4: return (long)(scratch + next() % sizeof scratch);
    case 5: return (long)(scratch + 1);
    case 6: return 0x1000;                       /* unmapped, low */
    case 7: return (long)0xffff800000000000ull;  /* kernel half */
    case 8: return (long)0x00007fffffffe000ull;  /* top of the user half */
    case 9: return (long)((uintptr_t)&state & ~4095ul); /* own data page */
    case 10: return 4096 * (long)(next() % 64);
    default: return (long)(next() % 4096);
    }
}

static const long known[] = {
    SYS_write, SYS_writev, SYS_ioctl, SYS_mmap, SYS_mprotect, SYS_munmap, SYS_brk,
    SYS_mincore, SYS_kill, SYS_getpid, SYS_getppid, SYS_gettid, SYS_sched_yield,
    SYS_arch_prctl, SYS_set_tid_address, SYS_clock_gettime, SYS_futex, 0x53500001,
};

int main(int argc, char **argv) {
    state = argc > 1 ? strtoull(argv[1], 0, 0) * 0x9e3779b97f4a7c15ull + 1 : 1;
    long count = argc > 2 ? atol(argv[2]) : 2000;
    /* A third argument `trace` prints each call before making it (to find
       the one a replayed seed stops at). */
    int trace = argc > 3;
    long made = 0;
    arena = mmap(0, ARENA_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED) return 1;
    /* Standard input from /dev/null: a read of the terminal waits for a
       key nobody types. */
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) != 0) return 1;
    /* And the terminal (1 and 2, one open file of this process's own)
       never waits: a random dup may still put it where reads go. */
    if (fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK) != 0) return 1;
    static const struct { long seconds, nanos; } short_wait = {0, 1000};
    /* select and pselect6 may write back what is left of their timeout. */
    static struct { long seconds, fraction; } short_timeout;
    for (long i = 0; i < count; i++) {
        long number;
        uint64_t choice = next() % 10;
        if (choice < 7)
            number = known[next() % (sizeof known / sizeof known[0])];
        else if (choice < 9)
            /* Every number Linux 6.1 has (to 450) and some beyond. */
            number = (long)(next() % 460);
        else
            number = (long)next();
        long a[6];
        for (int k = 0; k < 6; k++) a[k] = argument();
        switch (number) {
        case SYS_exit: case SYS_exit_group: case SYS_fork: case SYS_vfork:
        case SYS_clone: case SYS_wait4: case SYS_execve:
            continue;
        case SYS_kill:
            if (a[0] == getpid() || a[0] <= 0) continue;
            break;
        case SYS_rt_sigreturn:
            /* Resumes wherever the stack says: this program would end at
               once. The signals test covers a garbage frame. */
            continue;
        case SYS_futex:
            /* Waits only with a timeout (FUTEX_WAIT = 0, WAIT_BITSET = 9). */
            if ((a[1] & 127) == 0 || (a[1] & 127) == 9) a[3] = (long)&short_wait;
            break;
        case SYS_arch_prctl:
            /* A random FS base would break this program's own TLS. */
            if (a[0] == 0x1002) continue;
            break;
        case SYS_munmap: case SYS_mprotect: case SYS_mmap: case SYS_mremap:
            /* Memory calls aim at an arena of their own, or outside the
               user half, but not at this program's code, data and stack. */
            if ((uint64_t)a[0] < 0x800000000000ull && (number != SYS_mmap || a[0] != 0))
                a[0] = (long)(arena + (next() % (ARENA_PAGES * 2)) * 4096 + (next() % 8 == 0));
            break;
        case SYS_set_tid_address:
            break;
        /* Waits that could last for good: none, or a short one. */
        case SYS_nanosleep:
            a[0] = (long)&short_wait;
            break;
        case SYS_clock_nanosleep:
            a[1] = 0;
            a[2] = (long)&short_wait;
            break;
        case SYS_poll:
            a[2] = 0;
            break;
        case SYS_ppoll:
            a[2] = (long)&short_wait;
            break;
        case SYS_select: case SYS_pselect6:
            short_timeout.seconds = 0;
            short_timeout.fraction = 1;
            a[4] = (long)&short_timeout;
            break;
        case SYS_pause: case SYS_rt_sigsuspend:
        case SYS_epoll_wait: case SYS_epoll_pwait: case 441 /* epoll_pwait2 */:
            continue;
        /* Descriptors whose reads wait for an event that may never come
           (a counter at zero, a disarmed timer, a signal) are made
           non-blocking, as pipes are. */
        case SYS_eventfd:
            number = SYS_eventfd2;
            a[1] = O_NONBLOCK;
            break;
        case SYS_eventfd2: case SYS_timerfd_create:
            a[1] |= O_NONBLOCK;
            break;
        case SYS_signalfd:
            number = SYS_signalfd4;
            a[3] = O_NONBLOCK;
            break;
        case SYS_signalfd4:
            a[3] |= O_NONBLOCK;
            break;
        /* Locks never wait: another fuzzing process may hold one. */
        case SYS_flock:
            a[1] |= LOCK_NB;
            break;
        /* Pipes never block (a read of its own pipe would wait for good),
           and stay so; reads of the terminal (1 and 2) read /dev/null. */
        case SYS_pipe:
            number = SYS_pipe2;
            a[1] = O_NONBLOCK;
            break;
        case SYS_pipe2:
            a[1] |= O_NONBLOCK;
            break;
        case SYS_fcntl:
            if (a[1] == F_SETFL) a[2] |= O_NONBLOCK;
            /* F_SETLKW, F_OFD_SETLKW: the forms that do not wait. */
            if (a[1] == F_SETLKW) a[1] = F_SETLK;
            if (a[1] == 38) a[1] = 37;
            break;
        case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv: case SYS_preadv2:
            if (a[0] == 1 || a[0] == 2) a[0] = 0;
            break;
        default:
            break;
        }
        if (trace)
            dprintf(2, "call %ld: %ld (%#lx, %#lx, %#lx, %#lx)\n", i, number, a[0], a[1], a[2], a[3]);
        syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
        made++;
    }
    printf("sysfuzz: %ld calls made\n", made);
    return 0;
}
