/* A user program for the tests: POSIX threads (musl's pthreads on clone,
   futex and CLONE_CHILD_CLEARTID). Eight threads add to a counter under a
   mutex and hand results back through pthread_join; a condition variable
   passes a turn back and forth; each thread has its own thread id and
   thread-local storage. Prints "threads: ok" and exits 0, or says what was
   wrong and exits 1. With argument "exit", a thread ends the whole process
   with exit(7) while the main thread waits in pthread_join. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { THREADS = 8, ROUNDS = 1000, TURNS = 200 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long counter;
static int turn; /* 0: main's, 1: the partner's */
static __thread long mine;
static long tids[THREADS];

static void *add(void *arg) {
    long index = (long)arg;
    tids[index] = syscall(SYS_gettid);
    for (int i = 0; i < ROUNDS; i++) {
        mine++;
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    return (void *)(mine * 100 + index);
}

static void *partner(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < TURNS; i++) {
        while (turn != 1) pthread_cond_wait(&changed, &lock);
        turn = 0;
        pthread_cond_signal(&changed);
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

static void *exit_everything(void *arg) {
    (void)arg;
    exit(7);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        pthread_t thread;
        pthread_create(&thread, 0, exit_everything, 0);
        pthread_join(thread, 0);
        printf("threads: still here after exit(7) in a thread, which is wrong\n");
        return 1;
    }
    int failures = 0;
    pthread_t threads[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], 0, add, (void *)i) != 0) {
            printf("threads: FAILED: pthread_create\n");
            return 1;
        }
    for (long i = 0; i < THREADS; i++) {
        void *result = 0;
        if (pthread_join(threads[i], &result) != 0 || (long)result != ROUNDS * 100 + i) {
            printf("threads: FAILED: thread %ld returned %ld\n", i, (long)result);
            failures++;
        }
    }
    if (counter != THREADS * ROUNDS) {
        printf("threads: FAILED: counter %ld, expected %d\n", counter, THREADS * ROUNDS);
        failures++;
    }
    if (mine != 0) {
        printf("threads: FAILED: the main thread's thread-local value changed\n");
        failures++;
    }
    long me = syscall(SYS_gettid);
    if (me != getpid()) {
        printf("threads: FAILED: the main thread's id %ld is not the process id\n", me);
        failures++;
    }
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < i; j++)
            if (tids[i] == tids[j] || tids[i] == me || tids[i] <= 0) {
                printf("threads: FAILED: thread ids are not distinct\n");
                failures++;
            }
    pthread_t other;
    pthread_create(&other, 0, partner, 0);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < TURNS; i++) {
        turn = 1;
        pthread_cond_signal(&changed);
        while (turn != 0) pthread_cond_wait(&changed, &lock);
    }
    pthread_mutex_unlock(&lock);
    pthread_join(other, 0);
    if (failures) return 1;
    printf("threads: ok\n");
    return 0;
}
