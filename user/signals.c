/* A user program for the tests: signal delivery by the Linux personality.
   Handlers with siginfo (kill, raise, faults, SIGCHLD, SIGPIPE), the
   interrupted code's registers and FPU state kept across a handler,
   masks (blocked signals stay pending; sigsuspend), EINTR and
   SA_RESTART, the alternate stack, siglongjmp out of a SIGSEGV handler,
   int3 as SIGTRAP,
   default actions (terminate, ignore, stop and continue) as a parent's
   wait status shows them, kill to process groups, and interval timers
   (setitimer, alarm).
   Prints "signals: ok" and exits 0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("signals: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

static volatile sig_atomic_t count;
static volatile int last_signal, last_code, last_pid, last_status;
static volatile uintptr_t last_address;
static volatile uintptr_t handler_stack;

static void on_signal(int signal, siginfo_t *info, void *context) {
    (void)context;
    count++;
    last_signal = signal;
    last_code = info->si_code;
    last_pid = info->si_pid;
    last_status = info->si_status;
    last_address = (uintptr_t)info->si_addr;
    int local;
    handler_stack = (uintptr_t)&local;
}

static void handle(int signal, int flags) {
    struct sigaction action = {0};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, 0);
}

static void set_default(int signal) {
    struct sigaction action = {0};
    action.sa_handler = SIG_DFL;
    sigaction(signal, &action, 0);
}

/* The page the SIGSEGV handler opens up. */
static char *guarded;
static long page_size;

static void open_page(int signal, siginfo_t *info, void *context) {
    on_signal(signal, info, context);
    mprotect(guarded, page_size, PROT_READ | PROT_WRITE);
}

static sigjmp_buf escape;

static void jump_out(int signal) {
    (void)signal;
    count++;
    siglongjmp(escape, 1);
}

/* A handler that does floating-point work of its own. */
static volatile double handler_result;

static void float_work(int signal) {
    (void)signal;
    double x = 1.0;
    for (int i = 0; i < 10; i++) x = x * 1.5 + 0.25;
    handler_result = x;
    count++;
}

static void user_signals(void) {
    handle(SIGUSR1, 0);
    count = 0;
    check(kill(getpid(), SIGUSR1) == 0, "kill to myself");
    check(count == 1 && last_signal == SIGUSR1, "the SIGUSR1 handler ran once");
    check(last_code == SI_USER && last_pid == getpid(), "siginfo says kill from me (SI_USER, my pid)");
    count = 0;
    check(raise(SIGUSR1) == 0 && count == 1, "raise runs the handler");
    check(last_code == SI_TKILL, "raise is a tgkill (SI_TKILL)");
}

static void blocked_signals(void) {
    sigset_t block, old, pending;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    handle(SIGUSR2, 0);
    count = 0;
    sigprocmask(SIG_BLOCK, &block, &old);
    kill(getpid(), SIGUSR2);
    check(count == 0, "a blocked signal waits");
    sigpending(&pending);
    check(sigismember(&pending, SIGUSR2) == 1, "sigpending shows it");
    sigprocmask(SIG_SETMASK, &old, 0);
    check(count == 1 && last_signal == SIGUSR2, "unblocking delivers it at once");
    sigpending(&pending);
    check(sigismember(&pending, SIGUSR2) == 0, "and it is no longer pending");

    /* Blocked in the handler: the handler's own signal and sa_mask. */
    struct sigaction action;
    sigaction(SIGUSR2, 0, &action);
    check(action.sa_sigaction == on_signal, "sigaction reads the handler back");
}

static void faults(void) {
    page_size = sysconf(_SC_PAGESIZE);
    guarded = mmap(0, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(guarded != MAP_FAILED, "mmap");
    struct sigaction action = {0};
    action.sa_sigaction = open_page;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, 0);
    count = 0;
    guarded[100] = 42; /* faults once; the handler opens the page; retried */
    check(count == 1 && last_signal == SIGSEGV, "the SIGSEGV handler ran once");
    check(last_address == (uintptr_t)(guarded + 100), "si_addr is the faulting address");
    check(last_code == SEGV_ACCERR, "si_code is SEGV_ACCERR for a protected page");
    check(guarded[100] == 42, "the write was retried and landed");

    /* A write to an unmapped page, escaped with siglongjmp. */
    munmap(guarded, page_size);
    signal(SIGSEGV, jump_out);
    count = 0;
    if (sigsetjmp(escape, 1) == 0) {
        *(volatile char *)guarded = 1;
        check(0, "the write to an unmapped page went on");
    }
    check(count == 1, "siglongjmp left the SIGSEGV handler");
    /* The handler's mask went with the jump (sigsetjmp saved it): a second
       fault is delivered too. */
    if (sigsetjmp(escape, 1) == 0) {
        *(volatile char *)guarded = 1;
    }
    check(count == 2, "a second fault after siglongjmp is delivered too");
    set_default(SIGSEGV);

    /* int3 is a breakpoint: SIGTRAP (si_code SI_KERNEL), and the program
       goes on after the instruction, as on Linux (stress-ng's sigtrap). */
    handle(SIGTRAP, 0);
    count = 0;
    __asm__ volatile("int3");
    check(count == 1 && last_signal == SIGTRAP, "int3 raised SIGTRAP once");
    check(last_code == SI_KERNEL, "int3's SIGTRAP has si_code SI_KERNEL");
    set_default(SIGTRAP);
}

static void fpu_kept(void) {
    signal(SIGUSR1, float_work);
    volatile double mine = 3.0;
    double before = mine * 7.0 + 0.5;
    count = 0;
    raise(SIGUSR1);
    double after = mine * 7.0 + 0.5;
    check(count == 1 && handler_result > 80.0, "the handler did its floating-point work");
    check(before == after && before == 21.5, "the interrupted code's floating-point state is intact");
}

static void children(void) {
    handle(SIGCHLD, 0);
    count = 0;
    pid_t child = fork();
    if (child == 0) _exit(7);
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 7,
          "the child exits 7");
    check(count == 1 && last_signal == SIGCHLD, "SIGCHLD ran the handler");
    check(last_code == CLD_EXITED && last_pid == child && last_status == 7,
          "siginfo says the child exited 7");
    set_default(SIGCHLD);

    /* Default actions, as the parent's wait status shows them. */
    child = fork();
    if (child == 0) {
        raise(SIGTERM);
        _exit(0);
    }
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
          "SIGTERM's default ends the child");
    child = fork();
    if (child == 0) {
        signal(SIGTERM, SIG_IGN);
        raise(SIGTERM);
        _exit(3);
    }
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 3,
          "an ignored SIGTERM does nothing");
    child = fork();
    if (child == 0) {
        volatile int *nowhere = (volatile int *)(uintptr_t)getppid();
        *(nowhere - getppid() / sizeof(int) + 4) = 1; /* address 16 (or near) */
        _exit(0);
    }
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
          "a fault with no handler ends the child by SIGSEGV");
}

/* wait4's rusage: what the child used (its page faults at least). */
static void child_usage(void) {
    pid_t child = fork();
    if (child == 0) {
        char *pages = mmap(0, 64 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (int i = 0; i < 64; i++) pages[i * 4096] = 1;
        _exit(0);
    }
    struct rusage usage = {0};
    int status = 0;
    check(wait4(child, &status, 0, &usage) == child && WIFEXITED(status), "wait4 with rusage");
    check(usage.ru_minflt >= 64, "rusage counts the child's 64 page faults");
    check(usage.ru_maxrss >= 64 * 4, "rusage's largest size covers the child's 64 pages");
}

static void waitid_reports(void) {
    pid_t child = fork();
    if (child == 0) _exit(5);
    siginfo_t info = {0};
    check(waitid(P_PID, child, &info, WEXITED | WNOWAIT) == 0, "waitid WNOWAIT");
    check(info.si_pid == child && info.si_code == CLD_EXITED && info.si_status == 5 && info.si_signo == SIGCHLD,
          "waitid's siginfo says the child exited 5");
    memset(&info, 0, sizeof info);
    check(waitid(P_ALL, 0, &info, WEXITED) == 0 && info.si_pid == child, "WNOWAIT left it waitable");
    errno = 0;
    check(waitpid(child, 0, WNOHANG) == -1 && errno == ECHILD, "then it is gone");
    check(waitid(P_ALL, 0, &info, 0) == -1 && errno == EINVAL, "waitid asking for no change is EINVAL");
}

static void broken_pipe(void) {
    int ends[2];
    check(pipe(ends) == 0, "pipe");
    close(ends[0]);
    handle(SIGPIPE, 0);
    count = 0;
    errno = 0;
    check(write(ends[1], "x", 1) == -1 && errno == EPIPE, "a write with no reader is EPIPE");
    check(count == 1 && last_signal == SIGPIPE, "and raises SIGPIPE");
    set_default(SIGPIPE);
    pid_t child = fork();
    if (child == 0) {
        write(ends[1], "x", 1);
        _exit(0);
    }
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE,
          "SIGPIPE's default ends the writer");
    close(ends[1]);
}

static void interrupted_calls(void) {
    int ends[2];
    pipe(ends);
    pid_t parent = getpid();
    /* No SA_RESTART: a read waiting for input fails with EINTR. */
    handle(SIGUSR1, 0);
    count = 0;
    pid_t child = fork();
    if (child == 0) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, 0);
        kill(parent, SIGUSR1);
        _exit(0);
    }
    char byte;
    errno = 0;
    check(read(ends[0], &byte, 1) == -1 && errno == EINTR, "a read interrupted by a handler is EINTR");
    check(count == 1, "and the handler ran");
    waitpid(child, 0, 0);

    /* SA_RESTART: the read goes on and gets the byte written after. */
    handle(SIGUSR1, SA_RESTART);
    count = 0;
    child = fork();
    if (child == 0) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, 0);
        kill(parent, SIGUSR1);
        nanosleep(&pause, 0);
        write(ends[1], "r", 1);
        _exit(0);
    }
    check(read(ends[0], &byte, 1) == 1 && byte == 'r', "with SA_RESTART the read is restarted");
    check(count == 1, "after the handler ran");
    waitpid(child, 0, 0);
    close(ends[0]);
    close(ends[1]);

    /* sigsuspend: waits with a mask of its own, returns EINTR after the
       handler, and the old mask is back. */
    sigset_t block, during, now;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, 0);
    count = 0;
    child = fork();
    if (child == 0) {
        kill(parent, SIGUSR1);
        _exit(0);
    }
    sigemptyset(&during);
    errno = 0;
    check(sigsuspend(&during) == -1 && errno == EINTR, "sigsuspend returns EINTR");
    check(count == 1, "after the handler ran");
    sigprocmask(SIG_BLOCK, 0, &now);
    check(sigismember(&now, SIGUSR1) == 1, "the mask from before sigsuspend is back");
    sigprocmask(SIG_UNBLOCK, &block, 0);
    waitpid(child, 0, 0);
}

static void alternate_stack(void) {
    static char stack[16384];
    stack_t alternate = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0};
    check(sigaltstack(&alternate, 0) == 0, "sigaltstack");
    handle(SIGUSR2, SA_ONSTACK);
    handler_stack = 0;
    raise(SIGUSR2);
    check(handler_stack > (uintptr_t)stack && handler_stack < (uintptr_t)stack + sizeof stack,
          "SA_ONSTACK runs the handler on the alternate stack");
    handle(SIGUSR2, 0);
    raise(SIGUSR2);
    check(!(handler_stack > (uintptr_t)stack && handler_stack < (uintptr_t)stack + sizeof stack),
          "without SA_ONSTACK it runs on the usual stack");
}

static void stop_and_continue(void) {
    pid_t child = fork();
    if (child == 0) {
        for (;;) {
            struct timespec pause = {0, 5 * 1000 * 1000};
            nanosleep(&pause, 0);
        }
    }
    int status = 0;
    check(kill(child, SIGSTOP) == 0, "kill SIGSTOP");
    check(waitpid(child, &status, WUNTRACED) == child && WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
          "WUNTRACED sees the child stopped by SIGSTOP");
    check(kill(child, SIGCONT) == 0, "kill SIGCONT");
    check(waitpid(child, &status, WCONTINUED) == child && WIFCONTINUED(status),
          "WCONTINUED sees it continued");
    check(kill(child, SIGTERM) == 0, "kill SIGTERM");
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
          "then SIGTERM ends it");
}

static void process_groups(void) {
    int ready[2];
    pipe(ready);
    pid_t child = fork();
    if (child == 0) {
        setpgid(0, 0);
        write(ready[1], "g", 1);
        for (;;) pause();
    }
    char byte;
    read(ready[0], &byte, 1);
    int status = 0;
    check(kill(-child, SIGTERM) == 0, "kill to a process group");
    check(waitpid(-child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
          "waitpid for the group sees its member ended by SIGTERM");
    errno = 0;
    check(kill(-999999, SIGTERM) == -1 && errno == ESRCH, "kill to an empty group is ESRCH");
    check(kill(getpid(), 65) == -1 && errno == EINVAL, "kill with signal 65 is EINVAL");
    close(ready[0]);
    close(ready[1]);
}

static void interval_timers(void) {
    handle(SIGALRM, 0);
    count = 0;
    struct itimerval every = {.it_interval = {0, 10000}, .it_value = {0, 20000}};
    check(setitimer(ITIMER_REAL, &every, 0) == 0, "setitimer");
    struct itimerval now;
    check(getitimer(ITIMER_REAL, &now) == 0 && now.it_interval.tv_usec == 10000, "getitimer reads the interval back");
    while (count < 3) pause();
    check(count == 3 && last_signal == SIGALRM, "a periodic timer sends SIGALRM again and again");
    struct itimerval off = {0};
    check(setitimer(ITIMER_REAL, &off, &now) == 0 && now.it_interval.tv_usec == 10000, "disarming gives the old timer");
    check(getitimer(ITIMER_REAL, &now) == 0 && now.it_value.tv_sec == 0 && now.it_value.tv_usec == 0,
          "a disarmed timer reads as zero");
    check(alarm(5) == 0 && alarm(0) == 5, "alarm returns the seconds the previous one had left");
    errno = 0;
    check(setitimer(ITIMER_REAL + 7, &every, 0) == -1 && errno == EINVAL, "an unknown timer is EINVAL");
    set_default(SIGALRM);
    pid_t child = fork();
    if (child == 0) {
        alarm(1);
        for (;;) pause();
    }
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM,
          "SIGALRM's default ends a process that set an alarm");
}

/* rt_sigreturn on a stack of garbage: the kernel cannot resume anything
   from it and ends the program with SIGSEGV (and only the program). */
static void bad_sigreturn(void) {
    pid_t child = fork();
    if (child == 0) {
        static uint64_t garbage[128];
        memset(garbage, 0xff, sizeof garbage);
        __asm__ volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall" : : "r"(&garbage[8]) : "memory");
        _exit(0);
    }
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
          "rt_sigreturn from a garbage frame ends the program by SIGSEGV");
}

int main(void) {
    user_signals();
    blocked_signals();
    faults();
    fpu_kept();
    children();
    waitid_reports();
    child_usage();
    broken_pipe();
    interrupted_calls();
    alternate_stack();
    stop_and_continue();
    process_groups();
    bad_sigreturn();
    interval_timers();
    if (failures) {
        printf("signals: %d checks failed\n", failures);
        return 1;
    }
    printf("signals: ok\n");
    return 0;
}
