/* A user program for the tests: signal masks are each thread's own, as on
   Linux. A thread's pthread_sigmask leaves the others' alone; a new thread
   starts with its creator's mask; tgkill reaches the thread named and
   waits, pending for it alone, while that thread blocks the signal; a
   signal sent to the process is taken by a thread that does not block
   it. A stop signal stops every thread of the process: a thread spinning
   in user mode makes no progress until SIGCONT. Prints "threadsignals: ok" and exits 0, or says what was wrong and
   exits 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("threadsignals: FAILED: %s\n", what);
        failures++;
    }
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static volatile pid_t handled_on;
static volatile int handled_signal;

static void handler(int signal) {
    handled_on = gettid_();
    handled_signal = signal;
}

static int blocked(int signal) {
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, 0, &now);
    return sigismember(&now, signal);
}

static volatile pid_t worker_tid;
static volatile int stage;
static int worker_saw_inherited, worker_saw_pending_alone, main_saw_pending;

static void *worker(void *unused) {
    (void)unused;
    worker_tid = gettid_();
    /* Started while the creator blocked SIGUSR1: so does this thread. */
    worker_saw_inherited = blocked(SIGUSR1);
    /* Its own mask: block SIGUSR2 here only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, 0);
    stage = 1;
    while (stage != 2)
        sched_yield();
    /* The main thread sent SIGUSR1 to this thread, which blocks it. */
    sigset_t pending;
    sigpending(&pending);
    worker_saw_pending_alone = sigismember(&pending, SIGUSR1);
    stage = 3;
    while (stage != 4)
        sched_yield();
    /* Unblock SIGUSR1: the handler runs here, now. */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &set, 0);
    stage = 5;
    /* Spin (in user mode) until the process-directed SIGUSR2 was taken
       by the main thread: this one blocks it. */
    while (stage != 6)
        sched_yield();
    return 0;
}

static volatile unsigned long *spins;

static void *spinner(void *unused) {
    (void)unused;
    for (;;)
        (*spins)++;
    return 0;
}

static void sleep_ms(long ms) {
    struct timespec time = {0, ms * 1000000};
    nanosleep(&time, 0);
}

/* A child whose second thread spins in user mode, counting in shared
   memory; its first thread waits. Stopped, the count must not move. */
static void a_stop_stops_every_thread(void) {
    spins = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    check(spins != MAP_FAILED, "shared memory for the count");
    if (spins == MAP_FAILED)
        return;
    pid_t child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, 0, spinner, 0);
        for (;;)
            pause();
    }
    while (*spins == 0)
        sched_yield();
    check(kill(child, SIGSTOP) == 0, "SIGSTOP the child");
    int status = 0;
    check(waitpid(child, &status, WUNTRACED) == child && WIFSTOPPED(status), "the child stops");
    sleep_ms(20); /* a timer tick or two: the spinner is caught */
    unsigned long stopped = *spins;
    sleep_ms(50);
    check(*spins == stopped, "a thread of a stopped process makes no progress");
    check(kill(child, SIGCONT) == 0, "SIGCONT the child");
    sleep_ms(50);
    check(*spins != stopped, "continued, the thread runs again");
    kill(child, SIGKILL);
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status), "the child is killed");
}

int main(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigaction(SIGUSR1, &action, 0);
    sigaction(SIGUSR2, &action, 0);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, 0);
    pthread_t thread;
    check(pthread_create(&thread, 0, worker, 0) == 0, "pthread_create");
    while (stage != 1)
        sched_yield();
    check(worker_saw_inherited, "a new thread starts with its creator's mask");
    pthread_sigmask(SIG_UNBLOCK, &set, 0);
    check(!blocked(SIGUSR1), "the main thread unblocked SIGUSR1 for itself");
    check(!blocked(SIGUSR2), "the worker's blocking SIGUSR2 left the main thread's mask alone");

    /* tgkill to the worker, which blocks SIGUSR1: pending for it alone. */
    check(syscall(SYS_tgkill, getpid(), worker_tid, SIGUSR1) == 0, "tgkill");
    sigset_t pending;
    sigpending(&pending);
    main_saw_pending = sigismember(&pending, SIGUSR1);
    check(!main_saw_pending, "a signal sent to another thread is not pending for this one");
    check(handled_on == 0, "nobody ran the handler of a signal its target blocks");
    stage = 2;
    while (stage != 3)
        sched_yield();
    check(worker_saw_pending_alone, "the signal is pending for the thread it was sent to");
    stage = 4;
    while (stage != 5)
        sched_yield();
    check(handled_on == worker_tid && handled_signal == SIGUSR1,
          "the handler ran on the thread tgkill named, once it unblocked the signal");

    /* A signal to the process: the worker blocks SIGUSR2, so the main
       thread takes it. */
    handled_on = 0;
    check(kill(getpid(), SIGUSR2) == 0, "kill the process");
    for (int i = 0; i < 1000 && handled_on == 0; i++)
        sched_yield();
    check(handled_on == getpid() && handled_signal == SIGUSR2,
          "a signal to the process is taken by a thread that does not block it");
    stage = 6;
    pthread_join(thread, 0);

    a_stop_stops_every_thread();

    if (failures)
        return 1;
    printf("threadsignals: ok\n");
    return 0;
}
