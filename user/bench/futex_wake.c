/* futex_wake - the wake-up latency of a thread waiting in FUTEX_WAIT: a
 * round trip between two threads of one process over two private futex
 * words. One op = the main thread sets the helper's word to 1 and
 * FUTEX_WAKEs it, the helper (waiting in FUTEX_WAIT while its word is 0)
 * wakes, clears its word, sets the main thread's word to 1 and wakes it,
 * and the main thread, waiting on its own word, wakes and clears it.
 * Every word is checked after each wait. What mutexes, condition
 * variables and pthread_join cost on top of. Built like the baseline's
 * programs (static musl, the baseline's common.h), and run by `./x bench
 * linux` on Spindle and, added to the baseline's own initramfs, on
 * Linux. */
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

/* futex(2)'s operations on a word of this process only (musl has no
 * <linux/futex.h>). */
#define FUTEX_WAIT_PRIVATE (0 | 128)
#define FUTEX_WAKE_PRIVATE (1 | 128)

static _Atomic int to_helper, to_main;

/* Sets `word` to 1 and wakes its waiter, if any. */
static void post(_Atomic int *word)
{
    atomic_store(word, 1);
    if (syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0)
        die("futex(FUTEX_WAKE)");
}

/* Waits while `word` is 0, then takes it back to 0: its value, which
 * must be 1 (2 tells the helper to stop). */
static int take(_Atomic int *word)
{
    int value;
    while ((value = atomic_load(word)) == 0) {
        if (syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) < 0 &&
            errno != EAGAIN && errno != EINTR)
            die("futex(FUTEX_WAIT)");
    }
    atomic_store(word, 0);
    return value;
}

/* The helper: answers each post until it reads 2. */
static void *helper(void *arg)
{
    (void)arg;
    for (;;) {
        int value = take(&to_helper);
        if (value == 2)
            return NULL;
        if (value != 1)
            fail("the helper's word");
        post(&to_main);
    }
}

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        post(&to_helper);
        if (take(&to_main) != 1)
            fail("the main thread's word");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "futex_wake";
    pthread_t thread;
    if (pthread_create(&thread, NULL, helper, NULL) != 0)
        die("pthread_create");

    bench_run("futex_wake", run, NULL);

    atomic_store(&to_helper, 2);
    if (syscall(SYS_futex, &to_helper, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0)
        die("futex(FUTEX_WAKE)");
    if (pthread_join(thread, NULL) != 0)
        die("pthread_join");
    return 0;
}
