/* A user program for the tests: set-user-id and set-group-id programs,
   as execve honours them.
   Run as root, it makes a copy of itself owned by user 7 and group 8
   (chown) with both set-id bits (chmod 06755), and one with the bits but
   no group execute permission (which Linux reads as mandatory locking,
   not set-group-id). A forked child becomes nobody (setuid(65534): every
   id, and every capability, gone) and runs each copy with the argument
   "report"; the copy prints its real, effective and saved ids. The first
   must run with effective user 7 and group 8, saved ids the same, real
   ids still nobody's; the second with effective group nobody's.
   Prints "setid: ok" and exits 0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what)
{
    printf("setid: %s\n", what);
    return 1;
}

static int report(void)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0)
        return 1;
    printf("ids %u %u %u %u %u %u\n", ruid, euid, suid, rgid, egid, sgid);
    return 0;
}

/* Copies the running program to `path` with `mode` and owner 7:8. */
static int copy_self(const char *path, mode_t mode)
{
    int in = open("/proc/self/exe", O_RDONLY);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (in < 0 || out < 0)
        return -1;
    char buffer[4096];
    ssize_t got;
    while ((got = read(in, buffer, sizeof buffer)) > 0)
        if (write(out, buffer, (size_t)got) != got)
            return -1;
    close(in);
    close(out);
    /* chown clears the set-id bits, so the mode comes after. */
    if (chown(path, 7, 8) != 0 || chmod(path, mode) != 0)
        return -1;
    return 0;
}

/* Runs `path report` as nobody; its output line in `line`. */
static int run_as_nobody(const char *path, char *line, size_t size)
{
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0)
        return -1;
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        dup2(pipe_fds[1], 1);
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        execl(path, path, "report", (char *)0);
        _exit(3);
    }
    close(pipe_fds[1]);
    ssize_t got = read(pipe_fds[0], line, size - 1);
    close(pipe_fds[0]);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    line[got > 0 ? got : 0] = 0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "report") == 0)
        return report();
    if (getuid() != 0)
        return fail("must start as root");
    char line[128];
    if (copy_self("/tmp/setid-both", 06755) != 0)
        return fail("could not make the set-id copy");
    if (run_as_nobody("/tmp/setid-both", line, sizeof line) != 0)
        return fail("the set-id copy did not run as nobody");
    if (strcmp(line, "ids 65534 7 7 65534 8 8\n") != 0) {
        printf("setid: set-id copy printed %s", line);
        return 1;
    }
    if (copy_self("/tmp/setid-locking", 06745) != 0)
        return fail("could not make the locking copy");
    if (run_as_nobody("/tmp/setid-locking", line, sizeof line) != 0)
        return fail("the locking copy did not run as nobody");
    if (strcmp(line, "ids 65534 7 7 65534 65534 65534\n") != 0) {
        printf("setid: locking copy printed %s", line);
        return 1;
    }
    unlink("/tmp/setid-both");
    unlink("/tmp/setid-locking");
    printf("setid: ok\n");
    return 0;
}
