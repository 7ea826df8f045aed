/* vfork_exit_wait - the cost of vfork(): the child runs in the parent's
 * memory while the parent waits, and ends at once (_exit); the parent
 * then reaps it. One op = vfork + _exit + waitpid, the companion of the
 * baseline's fork_exit_wait (which copies the address space instead of
 * sharing it). The child writes a word the parent checks, so a vfork
 * that copied memory or did not hold the parent fails the run. Built like
 * the baseline's programs (static musl, the baseline's common.h), and run
 * by `./x bench linux` on Spindle and, added to the baseline's own
 * initramfs, on Linux. */
#include "common.h"
#include <sys/wait.h>

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    volatile uint64_t written_by_child = 0;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        pid_t child = vfork();
        if (child < 0)
            die("vfork");
        if (child == 0) {
            written_by_child = i + 1; /* the parent's memory */
            _exit(0);
        }
        if (written_by_child != i + 1)
            fail("the child did not run in the parent's memory first");
        int status;
        if (waitpid(child, &status, 0) != child)
            die("waitpid");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail("child did not exit with 0");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "vfork_exit_wait";
    bench_run("vfork_exit_wait", run, NULL);
    return 0;
}
