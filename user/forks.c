/* A user program for the tests: fork keeps parent and child apart
   (copy-on-write of data, heap and stack), wait4 reports how children
   ended (exit status, SIGSEGV, a kill), and the error cases give the
   right errno. Prints "forks: ok" and exits 0, or says what was wrong and
   exits 1. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int counter = 1;
static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("forks: FAILED: %s\n", what);
        failures++;
    }
}

static int all(const char *bytes, char value, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (bytes[i] != value) return 0;
    return 1;
}

int main(void) {
    enum { HEAP = 64 * 1024 };
    char *heap = malloc(HEAP);
    char stack[4096];
    memset(heap, 'p', HEAP);
    memset(stack, 'p', sizeof stack);
    pid_t me = getpid();

    pid_t child = fork();
    if (child == 0) {
        /* The child sees what the parent wrote before the fork... */
        int ok = counter == 1 && all(heap, 'p', HEAP) && all(stack, 'p', sizeof stack)
                 && getppid() == me && getpid() != me;
        /* ...and its writes are its own. */
        counter = 2;
        memset(heap, 'c', HEAP);
        memset(stack, 'c', sizeof stack);
        ok = ok && counter == 2 && all(heap, 'c', HEAP) && all(stack, 'c', sizeof stack);
        _exit(ok ? 42 : 1);
    }
    check(child > 0, "fork returned a child id");
    int status = 0;
    check(waitpid(child, &status, 0) == child, "waitpid returned the child");
    check(WIFEXITED(status) && WEXITSTATUS(status) == 42,
          "the child saw the parent's memory and changed only its own");
    check(counter == 1 && all(heap, 'p', HEAP) && all(stack, 'p', sizeof stack),
          "the parent's memory is unchanged by the child's writes");

    /* The parent writes after the fork; a second child sees the new
       values, not the first child's. */
    counter = 3;
    child = fork();
    if (child == 0) _exit(counter == 3 && heap[0] == 'p' ? 7 : 1);
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 7,
          "a second child sees the parent's later writes");

    /* A child that faults is ended by SIGSEGV; the parent goes on. */
    child = fork();
    if (child == 0) {
        *(volatile int *)0 = 1;
        _exit(0);
    }
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
          "a faulting child ends with SIGSEGV");

    /* A child that never makes a system call is ended by kill. */
    child = fork();
    if (child == 0)
        for (;;) counter++;
    check(waitpid(child, &status, WNOHANG) == 0, "WNOHANG with a running child gives 0");
    check(kill(child, SIGTERM) == 0, "kill of a running child");
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
          "the killed child ends with SIGTERM");

    /* Errors. */
    errno = 0;
    check(waitpid(-1, &status, 0) == -1 && errno == ECHILD, "no children gives ECHILD");
    errno = 0;
    check(kill(child, SIGTERM) == -1 && errno == ESRCH, "a reaped child gives ESRCH");
    child = fork();
    if (child == 0) _exit(3);
    errno = 0;
    check(waitpid(child, (int *)8, 0) == -1 && errno == EFAULT, "a bad status pointer gives EFAULT");

    if (failures) return 1;
    printf("forks: ok\n");
    return 0;
}
