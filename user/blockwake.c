/* A user program for the tests: a process waiting for an event is not
   run until the event comes. Five children each wait for ten seconds:
   in read() on an empty pipe, in poll() on one (no timeout), in ppoll()
   with a minute's timeout, in sigsuspend() and in sigtimedwait() for a
   blocked SIGUSR1. Meanwhile the parent counts how often each was put on
   the processor (voluntary plus involuntary context switches, from
   /proc/PID/status); a waiter that polls (looks again every millisecond)
   is switched thousands of times, one that blocks at most a couple.
   Then the parent writes to the pipes and sends the signals, and each
   child must see its event and exit 0. Prints each count and
   "blockwake: ok" and exits 0, or says what was wrong and exits 1.
   Waits BLOCKWAKE_SECONDS (environment) seconds instead of ten if set. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Most times a waiting child may be put on the processor during the
   wait (a stray wake-up or two is not polling). */
#define MAX_SWITCHES 2

enum { PIPE_READ, POLL, PPOLL, SIGSUSPEND, SIGTIMEDWAIT, WAITERS };

static const char *names[WAITERS] = {"read on a pipe", "poll on a pipe", "ppoll with a timeout",
                                     "sigsuspend", "sigtimedwait"};

static int failures;

static void check(int ok, const char *what, const char *detail) {
    if (!ok) {
        printf("blockwake: FAILED: %s: %s\n", what, detail);
        failures++;
    }
}

static volatile sig_atomic_t handled;

static void handler(int signal) {
    (void)signal;
    handled = 1;
}

/* The child's wait; its exit status says whether it saw its event. */
static int wait_in_child(int kind, int readable) {
    char byte = 0;
    struct pollfd entry = {.fd = readable, .events = POLLIN};
    sigset_t set;
    switch (kind) {
    case PIPE_READ:
        return read(readable, &byte, 1) == 1 && byte == 'x' ? 0 : 2;
    case POLL:
        if (poll(&entry, 1, -1) != 1 || !(entry.revents & POLLIN))
            return 3;
        return read(readable, &byte, 1) == 1 ? 0 : 4;
    case PPOLL: {
        struct timespec minute = {.tv_sec = 60};
        if (ppoll(&entry, 1, &minute, NULL) != 1 || !(entry.revents & POLLIN))
            return 5;
        return read(readable, &byte, 1) == 1 ? 0 : 6;
    }
    case SIGSUSPEND:
        sigemptyset(&set);
        if (sigsuspend(&set) != -1 || errno != EINTR)
            return 7;
        return handled ? 0 : 8;
    case SIGTIMEDWAIT: {
        struct timespec minute = {.tv_sec = 60};
        siginfo_t info;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        if (sigtimedwait(&set, &info, &minute) != SIGUSR1)
            return 9;
        return info.si_signo == SIGUSR1 && info.si_pid == getppid() ? 0 : 10;
    }
    }
    return 11;
}

/* voluntary_ctxt_switches + nonvoluntary_ctxt_switches of `pid`, or -1. */
static long switches_of(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *status = fopen(path, "r");
    if (!status)
        return -1;
    long total = 0;
    int found = 0;
    while (fgets(line, sizeof line, status)) {
        long count;
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &count) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %ld", &count) == 1) {
            total += count;
            found++;
        }
    }
    fclose(status);
    return found == 2 ? total : -1;
}

static void sleep_ms(long ms) {
    struct timespec span = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
    while (nanosleep(&span, &span) != 0 && errno == EINTR) {
    }
}

int main(void) {
    long seconds = 10;
    const char *asked = getenv("BLOCKWAKE_SECONDS");
    if (asked && atol(asked) > 0)
        seconds = atol(asked);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigaction(SIGUSR1, &action, NULL);
    /* Blocked in the children from birth: a signal cannot come before
       their wait, and sigtimedwait takes a blocked one. */
    sigset_t usr1, before;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, &before);

    pid_t children[WAITERS];
    int writers[WAITERS];
    for (int kind = 0; kind < WAITERS; kind++) {
        int pipe_ends[2];
        if (pipe(pipe_ends) != 0) {
            printf("blockwake: FAILED: pipe: %s\n", strerror(errno));
            return 1;
        }
        children[kind] = fork();
        if (children[kind] < 0) {
            printf("blockwake: FAILED: fork: %s\n", strerror(errno));
            return 1;
        }
        if (children[kind] == 0) {
            close(pipe_ends[1]);
            _exit(wait_in_child(kind, pipe_ends[0]));
        }
        close(pipe_ends[0]);
        writers[kind] = pipe_ends[1];
    }
    sigprocmask(SIG_SETMASK, &before, NULL);

    /* Let every child reach its wait, then count over the long wait. */
    sleep_ms(500);
    long first[WAITERS];
    for (int kind = 0; kind < WAITERS; kind++)
        first[kind] = switches_of(children[kind]);
    sleep_ms(seconds * 1000);
    for (int kind = 0; kind < WAITERS; kind++) {
        long last = switches_of(children[kind]);
        char detail[128];
        snprintf(detail, sizeof detail, "put on the processor %ld times in %ld s (at most %d)",
                 last - first[kind], seconds, MAX_SWITCHES);
        printf("blockwake: %s: %ld switches in %ld s\n", names[kind], last - first[kind], seconds);
        check(first[kind] >= 0 && last >= 0, names[kind], "no context switch counts in /proc/PID/status");
        check(last - first[kind] <= MAX_SWITCHES, names[kind], detail);
    }

    /* The events: each child must see its own and end well. */
    for (int kind = 0; kind < WAITERS; kind++) {
        if (kind == SIGSUSPEND || kind == SIGTIMEDWAIT)
            kill(children[kind], SIGUSR1);
        else if (write(writers[kind], "x", 1) != 1)
            check(0, names[kind], "write to its pipe failed");
    }
    for (int kind = 0; kind < WAITERS; kind++) {
        int status = 0;
        char detail[64];
        if (waitpid(children[kind], &status, 0) != children[kind]) {
            check(0, names[kind], "waitpid failed");
            continue;
        }
        snprintf(detail, sizeof detail, "the child ended with status %#x", status);
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, names[kind], detail);
    }
    if (failures)
        return 1;
    printf("blockwake: ok\n");
    return 0;
}
