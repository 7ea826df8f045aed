/* sem_pingpong - the round trip of a wake-up between two processes over
 * a System V semaphore set: one op = the parent posts semaphore 0
 * (semop +1), the child, blocked taking it (semop -1), wakes and posts
 * semaphore 1, which the parent is blocked taking. After each trip the
 * parent checks that both values are back to 0 (semctl GETVAL). Built
 * like the baseline's programs (static musl, the baseline's common.h),
 * and run by `./x bench linux` on Spindle and, added to the baseline's
 * own initramfs, on Linux. */
#include "common.h"
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/wait.h>

static int set;

/* Adds `change` to semaphore `number`, waiting while it cannot. */
static int operate(unsigned short number, short change)
{
    struct sembuf operation = {.sem_num = number, .sem_op = change};
    return semop(set, &operation, 1);
}

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (operate(0, 1) != 0)
            die("semop(post child)");
        if (operate(1, -1) != 0)
            die("semop(take parent)");
        if (semctl(set, 0, GETVAL) != 0 || semctl(set, 1, GETVAL) != 0)
            fail("a semaphore was not taken back to 0");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "sem_pingpong";
    set = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
    if (set < 0)
        die("semget");

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* answers each post until the set is removed */
        for (;;) {
            if (operate(0, -1) != 0)
                _exit(errno == EIDRM ? 0 : 2);
            if (operate(1, 1) != 0)
                _exit(2);
        }
    }

    bench_run("sem_pingpong", run, NULL);

    if (semctl(set, 0, IPC_RMID) != 0)
        die("semctl(IPC_RMID)");
    int status;
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("answering child failed");
    return 0;
}
