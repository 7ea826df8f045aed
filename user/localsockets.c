/* A user program for the tests: AF_UNIX sockets with names, as local
   daemons and their clients use them. A server process and a client
   process (forked) talk over a stream socket bound to a path (listen,
   connect, accept with the peer's name, getsockname/getpeername,
   SO_PEERCRED naming the client, bytes both ways, the end of file after
   the client closes) and over datagram sockets (sendto a path, recvfrom
   reporting the sender's abstract name, connect as the default peer),
   and the client passes a pipe's read end with SCM_RIGHTS. Errors:
   EADDRINUSE, EINVAL for a second bind, ECONNREFUSED, ENOENT,
   EPROTOTYPE, and EPIPE (without SIGPIPE under MSG_NOSIGNAL). Prints
   "localsockets: ok" and exits 0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define STREAM_PATH "/tmp/localsockets.stream"
#define DGRAM_PATH "/tmp/localsockets.dgram"

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("localsockets: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* The address of `path` (a leading '@' names an abstract socket), and
   its length in *length. */
static struct sockaddr_un named(const char *path, socklen_t *length) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    size_t bytes = strlen(path);
    memcpy(address.sun_path, path, bytes);
    if (path[0] == '@') {
        address.sun_path[0] = 0;
        *length = offsetof(struct sockaddr_un, sun_path) + bytes;
    } else {
        *length = offsetof(struct sockaddr_un, sun_path) + bytes + 1;
    }
    return address;
}

static int bind_to(int fd, const char *path) {
    socklen_t length;
    struct sockaddr_un address = named(path, &length);
    return bind(fd, (struct sockaddr *)&address, length);
}

static int connect_to(int fd, const char *path) {
    socklen_t length;
    struct sockaddr_un address = named(path, &length);
    return connect(fd, (struct sockaddr *)&address, length);
}

/* Sends descriptor `passed` with one byte over `fd`. */
static int send_descriptor(int fd, int passed) {
    char byte = 'f';
    struct iovec vector = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr header;
        char room[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {
        .msg_iov = &vector,
        .msg_iovlen = 1,
        .msg_control = control.room,
        .msg_controllen = sizeof control.room,
    };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &passed, sizeof(int));
    return sendmsg(fd, &message, 0) == 1 ? 0 : -1;
}

/* Receives a descriptor sent by send_descriptor over `fd`, or -1. */
static int receive_descriptor(int fd) {
    char byte;
    struct iovec vector = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr header;
        char room[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr message = {
        .msg_iov = &vector,
        .msg_iovlen = 1,
        .msg_control = control.room,
        .msg_controllen = sizeof control.room,
    };
    if (recvmsg(fd, &message, 0) != 1 || byte != 'f')
        return -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (header == NULL || header->cmsg_type != SCM_RIGHTS ||
        header->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int received;
    memcpy(&received, CMSG_DATA(header), sizeof(int));
    return received;
}

/* The client: connects, talks, passes a pipe, then sends datagrams. */
static int client(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect_to(fd, STREAM_PATH) != 0)
        return 10;
    if (write(fd, "hello", 5) != 5)
        return 11;
    char reply[16];
    if (read(fd, reply, sizeof reply) != 5 || memcmp(reply, "world", 5) != 0)
        return 12;
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0 || send_descriptor(fd, pipe_ends[0]) != 0)
        return 13;
    close(pipe_ends[0]);
    if (write(pipe_ends[1], "through the pipe", 16) != 16)
        return 14;
    close(pipe_ends[1]);
    close(fd);

    int datagram = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (datagram < 0 || bind_to(datagram, "@localsockets-client") != 0)
        return 20;
    socklen_t length;
    struct sockaddr_un server = named(DGRAM_PATH, &length);
    if (sendto(datagram, "first", 5, 0, (struct sockaddr *)&server, length) != 5)
        return 21;
    if (connect_to(datagram, DGRAM_PATH) != 0 || send(datagram, "second", 6, 0) != 6)
        return 22;
    close(datagram);
    return 0;
}

static void stream_server(int listener, pid_t child) {
    struct sockaddr_un peer;
    socklen_t length = sizeof peer;
    int fd = accept(listener, (struct sockaddr *)&peer, &length);
    check(fd >= 0, "accept");
    check(length == offsetof(struct sockaddr_un, sun_path), "an unnamed client");

    struct sockaddr_un own;
    length = sizeof own;
    check(getsockname(fd, (struct sockaddr *)&own, &length) == 0 &&
              strcmp(own.sun_path, STREAM_PATH) == 0 &&
              length == offsetof(struct sockaddr_un, sun_path) + sizeof STREAM_PATH,
          "getsockname of the accepted socket is the listener's path");

    struct ucred credentials;
    length = sizeof credentials;
    check(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 &&
              credentials.pid == child && credentials.uid == getuid(),
          "SO_PEERCRED names the client");

    char buffer[32];
    check(read(fd, buffer, sizeof buffer) == 5 && memcmp(buffer, "hello", 5) == 0,
          "the client's bytes");
    check(write(fd, "world", 5) == 5, "the reply");
    int passed = receive_descriptor(fd);
    check(passed >= 0, "a descriptor with SCM_RIGHTS");
    if (passed >= 0) {
        ssize_t count = read(passed, buffer, sizeof buffer);
        check(count == 16 && memcmp(buffer, "through the pipe", 16) == 0,
              "reading the passed pipe");
        close(passed);
    }
    check(read(fd, buffer, sizeof buffer) == 0, "the end of file after the client closed");
    check(send(fd, "x", 1, MSG_NOSIGNAL) == -1 && errno == EPIPE, "EPIPE to a closed peer");
    close(fd);
}

static void datagram_server(int datagram) {
    char buffer[32];
    struct sockaddr_un from;
    socklen_t length = sizeof from;
    ssize_t count = recvfrom(datagram, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &length);
    check(count == 5 && memcmp(buffer, "first", 5) == 0, "the first datagram");
    const char client_name[] = "localsockets-client";
    check(length == offsetof(struct sockaddr_un, sun_path) + 1 + strlen(client_name) &&
              from.sun_path[0] == 0 && memcmp(from.sun_path + 1, client_name, strlen(client_name)) == 0,
          "recvfrom names the abstract sender");
    count = recv(datagram, buffer, sizeof buffer, 0);
    check(count == 6 && memcmp(buffer, "second", 6) == 0, "a datagram to the default peer");
}

static void errors(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    int other = socket(AF_UNIX, SOCK_STREAM, 0);
    check(bind_to(fd, STREAM_PATH) == -1 && errno == EADDRINUSE, "EADDRINUSE for a bound path");
    check(bind_to(fd, "/tmp/localsockets.first") == 0, "bind");
    check(bind_to(fd, "/tmp/localsockets.second") == -1 && errno == EINVAL, "EINVAL binding twice");
    struct stat status;
    check(stat("/tmp/localsockets.first", &status) == 0 && S_ISSOCK(status.st_mode), "a socket node");
    check(stat("/tmp/localsockets.second", &status) == -1 && errno == ENOENT,
          "no node left by the refused bind");
    check(connect_to(other, "/tmp/localsockets.first") == -1 && errno == ECONNREFUSED,
          "ECONNREFUSED when nobody listens");
    check(connect_to(other, "/tmp/localsockets.none") == -1 && errno == ENOENT, "ENOENT");
    check(connect_to(other, DGRAM_PATH) == -1 && errno == EPROTOTYPE, "EPROTOTYPE");
    unlink("/tmp/localsockets.first");
    close(fd);
    close(other);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    unlink(STREAM_PATH);
    unlink(DGRAM_PATH);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    check(listener >= 0 && bind_to(listener, STREAM_PATH) == 0, "bind the stream socket");
    check(listen(listener, 4) == 0, "listen");
    int datagram = socket(AF_UNIX, SOCK_DGRAM, 0);
    check(datagram >= 0 && bind_to(datagram, DGRAM_PATH) == 0, "bind the datagram socket");
    errors();

    pid_t child = fork();
    if (child == 0)
        _exit(client());
    stream_server(listener, child);
    datagram_server(datagram);
    int status;
    check(waitpid(child, &status, 0) == child, "waitpid");
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the client succeeded");
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        printf("localsockets: the client exited with %d\n", WEXITSTATUS(status));

    close(listener);
    close(datagram);
    check(unlink(STREAM_PATH) == 0 && unlink(DGRAM_PATH) == 0, "unlink the socket nodes");
    if (failures)
        return 1;
    printf("localsockets: ok\n");
    return 0;
}
