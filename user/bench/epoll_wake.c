/* epoll_wake - the wake-up latency of a thread waiting in epoll_wait(): a
 * round trip of 1 byte between two processes over two pipes, as
 * poll_wake, but each side waits for its byte in epoll_wait() (infinite
 * timeout) on an epoll instance watching its read end, then reads it, so
 * every half trip is "a writer wakes an epoll waiter". One op = parent
 * writes a byte, child waits, reads it and writes it back, parent waits
 * and reads it. Each wait's report (one event, EPOLLIN, the descriptor's
 * data word) and each byte are checked. Built like the baseline's
 * programs (static musl, the baseline's common.h), and run by `./x bench
 * linux` on Spindle and, added to the baseline's own initramfs, on
 * Linux. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/wait.h>

static int to_child[2], to_parent[2];

/* An epoll instance watching `fd` for input, its data word `fd`. */
static int watch(int fd)
{
    int instance = epoll_create1(EPOLL_CLOEXEC);
    if (instance < 0)
        die("epoll_create1");
    struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(instance, EPOLL_CTL_ADD, fd, &event) != 0)
        die("epoll_ctl");
    return instance;
}

/* Waits in epoll_wait() until `fd` (watched by `instance`) is readable
 * or hung up, then reads its byte: what read() returned (0 once the
 * writer is gone: Linux reports an empty pipe without writers as
 * EPOLLHUP alone), -1 for a wrong report. */
static ssize_t wait_then_read(int instance, int fd, char *byte)
{
    struct epoll_event event;
    if (epoll_wait(instance, &event, 1, -1) != 1)
        return -1;
    if (event.data.fd != fd || !(event.events & (EPOLLIN | EPOLLHUP)))
        return -1;
    return read(fd, byte, 1);
}

static int parent_instance;

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    char byte = 'e';
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (write(to_child[1], &byte, 1) != 1)
            die("write(pipe)");
        if (wait_then_read(parent_instance, to_parent[0], &byte) != 1 || byte != 'e')
            fail("epoll_wait+read(pipe)");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "epoll_wake";
    if (pipe(to_child) != 0 || pipe(to_parent) != 0)
        die("pipe");

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* echo bytes until the parent closes its end */
        char byte;
        close(to_child[1]);
        close(to_parent[0]);
        int instance = watch(to_child[0]);
        for (;;) {
            ssize_t got = wait_then_read(instance, to_child[0], &byte);
            if (got == 0)
                _exit(0);
            if (got != 1 || write(to_parent[1], &byte, 1) != 1)
                _exit(2);
        }
    }
    close(to_child[0]);
    close(to_parent[1]);
    parent_instance = watch(to_parent[0]);

    bench_run("epoll_wake", run, NULL);

    close(to_child[1]);
    int status;
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("echo child failed");
    return 0;
}
