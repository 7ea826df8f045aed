/* pidfd_exit_wait - waiting for a child's end through a process
 * descriptor: fork, pidfd_open(child), poll() on the descriptor until it
 * turns readable (the child has ended), waitid(P_PIDFD) to reap it. One op
 * = those calls and the child's _exit: the companion of the baseline's
 * fork_exit_wait, with the wake-up going through the descriptor's wait
 * queue. Every result is checked in the timed loop. Built like the
 * baseline's programs (static musl, the baseline's common.h), and run by
 * `./x bench linux` on Spindle and, added to the baseline's own
 * initramfs, on Linux. */
#include "common.h"
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        pid_t child = fork();
        if (child < 0)
            die("fork");
        if (child == 0)
            _exit(7);
        int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
        if (pidfd < 0)
            die("pidfd_open");
        struct pollfd entry = {.fd = pidfd, .events = POLLIN};
        if (poll(&entry, 1, -1) != 1 || !(entry.revents & POLLIN))
            fail("poll(pidfd) did not report the end");
        siginfo_t info = {0};
        if (waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED) != 0)
            die("waitid(P_PIDFD)");
        if (info.si_pid != child || info.si_code != CLD_EXITED || info.si_status != 7)
            fail("waitid(P_PIDFD) reported another end");
        if (close(pidfd) != 0)
            die("close(pidfd)");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "pidfd_exit_wait";
    bench_run("pidfd_exit_wait", run, NULL);
    return 0;
}
