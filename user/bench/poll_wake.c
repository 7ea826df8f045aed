/* poll_wake - the wake-up latency of a thread waiting in poll(): a round
 * trip of 1 byte between two processes over two pipes, as pipe_rtt, but
 * each side waits for its byte in poll() (infinite timeout) before it
 * reads it, so every half trip is "a writer wakes a poller". One op =
 * parent writes a byte, child polls, reads it and writes it back, parent
 * polls and reads it. Built like the baseline's programs (static musl,
 * the baseline's common.h), and run by `./x bench linux` on Spindle and,
 * added to the baseline's own initramfs, on Linux. */
#include "common.h"
#include <poll.h>
#include <sys/wait.h>

static int to_child[2], to_parent[2];

/* Waits in poll() until `fd` is readable, then reads its byte. */
static ssize_t poll_then_read(int fd, char *byte)
{
    struct pollfd entry = {.fd = fd, .events = POLLIN};
    if (poll(&entry, 1, -1) != 1)
        return -1;
    return read(fd, byte, 1);
}

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    char byte = 'p';
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (write(to_child[1], &byte, 1) != 1)
            die("write(pipe)");
        if (poll_then_read(to_parent[0], &byte) != 1)
            die("poll+read(pipe)");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "poll_wake";
    if (pipe(to_child) != 0 || pipe(to_parent) != 0)
        die("pipe");

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* echo bytes until the parent closes its end */
        char byte;
        close(to_child[1]);
        close(to_parent[0]);
        for (;;) {
            ssize_t got = poll_then_read(to_child[0], &byte);
            if (got == 0)
                _exit(0);
            if (got != 1 || write(to_parent[1], &byte, 1) != 1)
                _exit(2);
        }
    }
    close(to_child[0]);
    close(to_parent[1]);

    bench_run("poll_wake", run, NULL);

    close(to_child[1]);
    int status;
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("echo child failed");
    return 0;
}
