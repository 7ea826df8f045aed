/* unix_stream_rtt - the round trip of a message between two processes
 * over a named AF_UNIX stream socket, as a local daemon and its client
 * talk: the parent binds a socket to a path in /tmp and listens, the
 * child connects to that path, and the parent accepts. One op = the
 * parent sends 16 bytes, the child receives them and sends them back,
 * the parent receives them and checks every byte. Built like the
 * baseline's programs (static musl, the baseline's common.h), and run by
 * `./x bench linux` on Spindle and, added to the baseline's own
 * initramfs, on Linux. */
#include "common.h"
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define SOCKET_PATH "/tmp/unix_stream_rtt.sock"
#define MESSAGE_BYTES 16

static int connection;

/* Reads exactly `count` bytes from `fd`: 0, or -1 at the end or on an
 * error. */
static int read_all(int fd, char *buffer, size_t count)
{
    size_t done = 0;
    while (done < count) {
        ssize_t got = read(fd, buffer + done, count - done);
        if (got <= 0)
            return -1;
        done += (size_t)got;
    }
    return 0;
}

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    char message[MESSAGE_BYTES], echo[MESSAGE_BYTES];
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        memset(message, 'a' + (int)(i % 26), sizeof message);
        if (write(connection, message, sizeof message) != sizeof message)
            die("write(socket)");
        if (read_all(connection, echo, sizeof echo) != 0)
            die("read(socket)");
        if (memcmp(message, echo, sizeof message) != 0)
            fail("the echo differs");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "unix_stream_rtt";
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    strcpy(address.sun_path, SOCKET_PATH);
    socklen_t length = offsetof(struct sockaddr_un, sun_path) + sizeof SOCKET_PATH;
    unlink(SOCKET_PATH);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) != 0 ||
        listen(listener, 1) != 0)
        die("socket/bind/listen");

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* echo messages until the parent closes */
        close(listener);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, length) != 0)
            _exit(2);
        char buffer[MESSAGE_BYTES];
        for (;;) {
            ssize_t got = read(fd, buffer, sizeof buffer);
            if (got == 0)
                _exit(0);
            if (got < 0 || write(fd, buffer, (size_t)got) != got)
                _exit(3);
        }
    }
    connection = accept(listener, NULL, NULL);
    if (connection < 0)
        die("accept");
    close(listener);
    unlink(SOCKET_PATH);

    bench_run("unix_stream_rtt", run, NULL);

    close(connection);
    int status;
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("echo child failed");
    return 0;
}
