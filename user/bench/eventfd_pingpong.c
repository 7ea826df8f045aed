/* eventfd_pingpong - the round trip of an event between two processes
 * over two eventfd counters: one op = the parent adds 1 to the child's
 * counter, the child's blocking read takes it and adds 1 to the
 * parent's, the parent's blocking read takes it. Every read's value is
 * checked. The counters are made before the fork, so both processes
 * share them, as a program shares an eventfd with the children it wakes.
 * Built like the baseline's programs (static musl, the baseline's
 * common.h), and run by `./x bench linux` on Spindle and, added to the
 * baseline's own initramfs, on Linux. */
#include "common.h"
#include <sys/eventfd.h>
#include <sys/wait.h>

static int to_child, to_parent;

/* Adds 1 to counter `fd`. */
static int post(int fd)
{
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == sizeof one ? 0 : -1;
}

/* Waits for counter `fd` and takes it: 0 if it held exactly 1. */
static int take(int fd)
{
    uint64_t value = 0;
    if (read(fd, &value, sizeof value) != sizeof value)
        return -1;
    return value == 1 ? 0 : -1;
}

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (post(to_child) != 0)
            die("write(eventfd)");
        if (take(to_parent) != 0)
            fail("read(eventfd)");
    }
    return now_ns() - start;
}

/* The value the parent adds to end the child's loop. */
#define STOP 2

int main(void)
{
    bench_program = "eventfd_pingpong";
    to_child = eventfd(0, EFD_CLOEXEC);
    to_parent = eventfd(0, EFD_CLOEXEC);
    if (to_child < 0 || to_parent < 0)
        die("eventfd");

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* answer each post until the parent says stop */
        for (;;) {
            uint64_t value = 0;
            if (read(to_child, &value, sizeof value) != sizeof value)
                _exit(2);
            if (value == STOP)
                _exit(0);
            if (value != 1 || post(to_parent) != 0)
                _exit(3);
        }
    }

    bench_run("eventfd_pingpong", run, NULL);

    uint64_t stop = STOP;
    if (write(to_child, &stop, sizeof stop) != sizeof stop)
        die("write(eventfd)");
    int status;
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("answering child failed");
    return 0;
}
