/* ls_l - SPIN's Unix-server figure `ls -l` (paper 002, table 2): one run
 * of `ls -l` on a directory of about twenty files, as a shell would start
 * it: fork, exec of busybox's ls with its output to /dev/null, wait. Each
 * run's exit status is checked. Built like the baseline's programs
 * (static musl, the baseline's common.h), and run by `./x bench linux` on
 * Spindle and, added to the baseline's own initramfs, on Linux. */
#include "common.h"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t run(uint64_t n, void *arg)
{
    (void)arg;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        pid_t child = fork();
        if (child < 0)
            die("fork");
        if (child == 0) {
            int null = open("/dev/null", O_WRONLY);
            if (null < 0 || dup2(null, 1) < 0)
                _exit(126);
            execl("/bin/ls", "ls", "-l", "/bench", (char *)0);
            _exit(127);
        }
        int status = 0;
        if (waitpid(child, &status, 0) != child)
            die("waitpid");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail("ls -l /bench did not exit 0");
    }
    return now_ns() - start;
}

int main(void)
{
    bench_program = "ls_l";
    bench_run("ls_l", run, NULL);
    return 0;
}
