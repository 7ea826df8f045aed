/* flock - the cost of an uncontended flock(2) lock: one op =
 * flock(LOCK_EX) then flock(LOCK_UN) on a file nobody else locks, each
 * result checked (the lock of a lock file, as `flock(1)` and package
 * managers take it). Built like the baseline's programs (static musl,
 * the baseline's common.h), and run by `./x bench linux` on Spindle and,
 * added to the baseline's own initramfs, on Linux. */
#include "common.h"
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#define FILE_PATH "/tmp/bench_flock.dat"

static uint64_t run(uint64_t n, void *arg)
{
    int fd = *(int *)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (flock(fd, LOCK_EX) != 0)
            die("flock(LOCK_EX)");
        if (flock(fd, LOCK_UN) != 0)
            die("flock(LOCK_UN)");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "flock";
    int fd = open(FILE_PATH, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open(" FILE_PATH ")");
    bench_run("flock", run, &fd);
    /* Released: another description can take the lock at once. */
    int other = open(FILE_PATH, O_RDWR);
    if (other < 0)
        die("open(" FILE_PATH ") again");
    if (flock(other, LOCK_EX | LOCK_NB) != 0)
        die("flock(LOCK_EX | LOCK_NB) after the last release");
    close(other);
    close(fd);
    unlink(FILE_PATH);
    return 0;
}
