/* A user program for the tests: AF_INET sockets over the loopback
   interface, as Linux programs use them. UDP: bind to an ephemeral port,
   getsockname, sendto/recvfrom with the sender's address, a connected
   socket ignoring strangers, MSG_PEEK, a datagram cut to the buffer with
   MSG_TRUNC telling its length, sendmsg/recvmsg with vectors. TCP:
   listen, a non-blocking connect (EINPROGRESS, then poll and SO_ERROR),
   accept4 with the peer's address, 256 KiB each way between two
   processes checked byte for byte, shutdown(SHUT_WR) read as the end,
   getpeername, poll on a listener, EPIPE after the peer closed. Errors:
   EAFNOSUPPORT, EADDRINUSE, EADDRNOTAVAIL, ECONNREFUSED, ENOTSOCK,
   ENOTCONN, EAGAIN, EBADF, EFAULT. Prints "sockets: ok" and exits 0, or
   says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("sockets: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

static struct sockaddr_in loopback(unsigned short port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return address;
}

static unsigned short port_of(int fd) {
    struct sockaddr_in address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0)
        return 0;
    return ntohs(address.sin_port);
}

static void udp(void) {
    int server = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in address = loopback(0);
    check(server >= 0 && bind(server, (struct sockaddr *)&address, sizeof address) == 0, "udp bind");
    unsigned short port = port_of(server);
    check(port >= 32768, "an ephemeral port");
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = loopback(port);
    check(sendto(client, "hello", 5, 0, (struct sockaddr *)&to, sizeof to) == 5, "sendto");
    char buffer[64];
    struct sockaddr_in from;
    socklen_t from_length = sizeof from;
    check(recv(server, buffer, sizeof buffer, MSG_PEEK) == 5, "MSG_PEEK");
    ssize_t got = recvfrom(server, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &from_length);
    check(got == 5 && memcmp(buffer, "hello", 5) == 0, "recvfrom");
    check(from_length == sizeof from && from.sin_family == AF_INET && ntohs(from.sin_port) == port_of(client)
              && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
          "recvfrom says the sender");
    /* Connected: only the peer's datagrams. */
    check(connect(client, (struct sockaddr *)&to, sizeof to) == 0, "udp connect");
    int stranger = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in client_address = loopback(port_of(client));
    sendto(stranger, "x", 1, 0, (struct sockaddr *)&client_address, sizeof client_address);
    check(recv(client, buffer, sizeof buffer, MSG_DONTWAIT) == -1 && errno == EAGAIN,
          "a connected socket ignores a stranger (EAGAIN)");
    /* Cut to the buffer; MSG_TRUNC gives the whole length. */
    char big[100];
    memset(big, 'b', sizeof big);
    check(send(client, big, sizeof big, 0) == 100, "send 100 bytes");
    check(recv(server, buffer, 10, MSG_TRUNC) == 100, "MSG_TRUNC says the datagram's length");
    /* sendmsg/recvmsg with two vectors each. */
    struct iovec out[2] = {{"ab", 2}, {"cdef", 4}};
    struct msghdr message = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = out, .msg_iovlen = 2};
    check(sendmsg(stranger, &message, 0) == 6, "sendmsg");
    char first[3] = {0}, second[8] = {0};
    struct iovec in[2] = {{first, 3}, {second, 8}};
    struct sockaddr_in name;
    struct msghdr received = {.msg_name = &name, .msg_namelen = sizeof name, .msg_iov = in, .msg_iovlen = 2};
    check(recvmsg(server, &received, 0) == 6 && memcmp(first, "abc", 3) == 0 && memcmp(second, "def", 3) == 0,
          "recvmsg scatters over the vectors");
    check(ntohs(name.sin_port) == port_of(stranger), "recvmsg names the sender");
    /* Errors. */
    struct sockaddr_in taken = loopback(port);
    int other = socket(AF_INET, SOCK_DGRAM, 0);
    check(bind(other, (struct sockaddr *)&taken, sizeof taken) == -1 && errno == EADDRINUSE, "EADDRINUSE");
    struct sockaddr_in foreign = loopback(1);
    foreign.sin_addr.s_addr = inet_addr("10.1.2.3");
    check(bind(other, (struct sockaddr *)&foreign, sizeof foreign) == -1 && errno == EADDRNOTAVAIL,
          "EADDRNOTAVAIL");
    check(bind(other, (struct sockaddr *)&taken, 4) == -1 && errno == EINVAL, "a short address is EINVAL");
    check(sendto(other, "x", 1, 0, (struct sockaddr *)0x10, sizeof to) == -1 && errno == EFAULT, "EFAULT");
    close(server);
    close(client);
    close(stranger);
    close(other);
}

/* The child's side of the TCP test: connects, receives 256 KiB and sends
   it back, then shuts down its sending. */
static int tcp_child(unsigned short port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = loopback(port);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0)
        return 2;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static char data[256 * 1024];
    size_t got = 0;
    while (got < sizeof data) {
        ssize_t count = read(fd, data + got, sizeof data - got);
        if (count <= 0)
            return 3;
        got += (size_t)count;
    }
    size_t sent = 0;
    while (sent < sizeof data) {
        ssize_t count = write(fd, data + sent, sizeof data - sent);
        if (count <= 0)
            return 4;
        sent += (size_t)count;
    }
    shutdown(fd, SHUT_WR);
    char end;
    return read(fd, &end, 1) == 0 ? 0 : 5;
}

static void tcp(void) {
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    int one = 1;
    check(setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0, "SO_REUSEADDR");
    struct sockaddr_in address = loopback(0);
    check(bind(listener, (struct sockaddr *)&address, sizeof address) == 0 && listen(listener, 8) == 0,
          "bind and listen");
    unsigned short port = port_of(listener);
    int type = 0;
    socklen_t length = sizeof type;
    check(getsockopt(listener, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM, "SO_TYPE");
    struct pollfd waiting = {listener, POLLIN, 0};
    check(poll(&waiting, 1, 0) == 0, "no connection waits yet");

    /* A non-blocking connect: EINPROGRESS, then writable, SO_ERROR 0. */
    int quick = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in to = loopback(port);
    check(connect(quick, (struct sockaddr *)&to, sizeof to) == -1 && errno == EINPROGRESS, "EINPROGRESS");
    struct pollfd connecting = {quick, POLLOUT, 0};
    check(poll(&connecting, 1, 1000) == 1 && (connecting.revents & POLLOUT), "the connection completes");
    int error = -1;
    length = sizeof error;
    check(getsockopt(quick, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0, "SO_ERROR is 0");
    check(poll(&waiting, 1, 1000) == 1 && (waiting.revents & POLLIN), "poll says a connection waits");
    struct sockaddr_in peer;
    socklen_t peer_length = sizeof peer;
    int accepted = accept4(listener, (struct sockaddr *)&peer, &peer_length, SOCK_CLOEXEC);
    check(accepted >= 0 && ntohs(peer.sin_port) == port_of(quick), "accept4 names the peer");
    check(getpeername(quick, (struct sockaddr *)&peer, &peer_length) == 0 && ntohs(peer.sin_port) == port,
          "getpeername");
    char byte;
    check(recv(accepted, &byte, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN, "nothing to read yet: EAGAIN");
    close(quick);
    check(read(accepted, &byte, 1) == 0, "the peer closed: the end");
    signal(SIGPIPE, SIG_IGN);
    errno = 0;
    for (int i = 0; i < 100 && write(accepted, "x", 1) == 1; i++)
        usleep(1000);
    check(write(accepted, "x", 1) == -1 && errno == EPIPE, "writing to a closed connection is EPIPE");
    close(accepted);

    /* 256 KiB each way with a child. */
    pid_t child = fork();
    if (child == 0)
        _exit(tcp_child(port));
    int server = accept(listener, 0, 0);
    check(server >= 0, "accept");
    static char data[256 * 1024], back[256 * 1024];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 7 % 251);
    size_t sent = 0, got = 0;
    while (sent < sizeof data) {
        ssize_t count = write(server, data + sent, sizeof data - sent);
        if (count <= 0)
            break;
        sent += (size_t)count;
    }
    while (got < sizeof back) {
        ssize_t count = read(server, back + got, sizeof back - got);
        if (count <= 0)
            break;
        got += (size_t)count;
    }
    check(sent == sizeof data && got == sizeof back && memcmp(data, back, sizeof data) == 0,
          "256 KiB go and come back intact");
    check(read(server, &byte, 1) == 0, "the child's shutdown(SHUT_WR) reads as the end");
    close(server);
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child's side went well");
    close(listener);

    /* Errors. */
    int refused = socket(AF_INET, SOCK_STREAM, 0);
    check(connect(refused, (struct sockaddr *)&to, sizeof to) == -1 && errno == ECONNREFUSED,
          "nobody listens: ECONNREFUSED");
    int fresh = socket(AF_INET, SOCK_STREAM, 0);
    check(send(fresh, "x", 1, 0) == -1 && errno == ENOTCONN, "ENOTCONN");
    check(getpeername(fresh, (struct sockaddr *)&peer, &peer_length) == -1 && errno == ENOTCONN,
          "getpeername of an unconnected socket");
    close(refused);
    close(fresh);
}

int main(void) {
    check(socket(AF_INET6, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT, "AF_INET6 is EAFNOSUPPORT");
    int local = socket(AF_UNIX, SOCK_STREAM, 0);
    check(local >= 0, "an AF_UNIX stream socket is made");
    if (local >= 0) close(local);
    check(socket(AF_INET, SOCK_RAW, 0) == -1, "SOCK_RAW is refused");
    check(listen(0, 1) == -1 && errno == ENOTSOCK, "ENOTSOCK on the terminal");
    check(listen(99, 1) == -1 && errno == EBADF, "EBADF");
    udp();
    tcp();
    if (failures)
        return 1;
    printf("sockets: ok\n");
    return 0;
}
