/* fcntl_lock - the cost of an uncontended POSIX record lock: one op =
 * fcntl(F_SETLK) taking a write lock on a whole file, then
 * fcntl(F_SETLK) releasing it, each result checked. Nobody else holds
 * or waits for a lock on the file, so this is the lock table's fast path
 * (what a database's or a mail spool's lock costs when nobody is in the
 * way). Built like the baseline's programs (static musl, the baseline's
 * common.h), and run by `./x bench linux` on Spindle and, added to the
 * baseline's own initramfs, on Linux. */
#include "common.h"
#include <fcntl.h>
#include <unistd.h>

#define FILE_PATH "/tmp/bench_fcntl_lock.dat"

static uint64_t run(uint64_t n, void *arg)
{
    int fd = *(int *)arg;
    struct flock lock = {.l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        lock.l_type = F_WRLCK;
        if (fcntl(fd, F_SETLK, &lock) != 0)
            die("fcntl(F_SETLK, F_WRLCK)");
        lock.l_type = F_UNLCK;
        if (fcntl(fd, F_SETLK, &lock) != 0)
            die("fcntl(F_SETLK, F_UNLCK)");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "fcntl_lock";
    int fd = open(FILE_PATH, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open(" FILE_PATH ")");
    bench_run("fcntl_lock", run, &fd);
    /* Released: another process's test sees no lock. */
    struct flock test = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_GETLK, &test) != 0)
        die("fcntl(F_GETLK)");
    if (test.l_type != F_UNLCK)
        fail("the lock was still held after the last release");
    close(fd);
    unlink(FILE_PATH);
    return 0;
}
