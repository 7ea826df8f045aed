/* A user program for the tests: fork and execve. The child replaces
   itself with busybox (`echo` with arguments and an environment variable
   expanded by `sh -c`), the parent waits and checks the exit status; an
   execve of a missing file is ENOENT, of a non-program ENOEXEC, with a
   bad pointer EFAULT, and a close-on-exec descriptor is closed in the new
   program while others stay open. Prints "execs: ok" and exits 0, or says
   what was wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("execs: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* Runs argv[0] with argv and envp in a child; its wait status. */
static int run(char *const argv[], char *const envp[]) {
    pid_t child = fork();
    if (child == 0) {
        execve(argv[0], argv, envp);
        _exit(120 + (errno & 7));
    }
    int status = -1;
    if (waitpid(child, &status, 0) != child) return -1;
    return status;
}

int main(void) {
    char *const echo[] = {"/bin/busybox", "echo", "from", "execve", 0};
    int status = run(echo, (char *const[]){0});
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "busybox echo through execve exits 0");

    char *const shell[] = {"/bin/sh", "-c", "test \"$SPINDLE\" = yes && exit 7", 0};
    status = run(shell, (char *const[]){"SPINDLE=yes", 0});
    check(WIFEXITED(status) && WEXITSTATUS(status) == 7, "the environment reaches the new program");

    /* A descriptor kept, one closed on exec: the shell reports which it sees. */
    int kept = open("/dev/null", O_WRONLY);
    int closed = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char script[128];
    snprintf(script, sizeof script, "(echo >&%d) 2>/dev/null || exit 1; (echo >&%d) 2>/dev/null && exit 2; exit 0",
             kept, closed);
    char *const fds[] = {"/bin/sh", "-c", script, 0};
    status = run(fds, (char *const[]){0});
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "close-on-exec closes only the marked descriptor");

    check(execve("/no/such/program", echo, 0) == -1 && errno == ENOENT, "a missing program is ENOENT");
    check(execve("/dev/null", echo, 0) == -1 && errno == EACCES, "a device is EACCES");
    int text = open("/tmp/not-a-program", O_CREAT | O_WRONLY, 0755);
    check(write(text, "plain text\n", 11) == 11, "write a text file");
    close(text);
    check(execve("/tmp/not-a-program", echo, 0) == -1 && errno == ENOEXEC, "a text file is ENOEXEC");
    /* Scripts: the interpreter named on the first line runs, with its one
       argument, then the script's path, then the script's arguments. */
    static const char body[] = "#!/bin/sh -e\n[ \"$0\" = /tmp/script ] && [ \"$1\" = one ] || exit 1\nexit 7\n";
    int file = open("/tmp/script", O_CREAT | O_WRONLY | O_TRUNC, 0755);
    check(write(file, body, sizeof body - 1) == (ssize_t)(sizeof body - 1), "write a script");
    close(file);
    char *const script_argv[] = {"/tmp/script", "one", 0};
    status = run(script_argv, (char *const[]){0});
    check(WIFEXITED(status) && WEXITSTATUS(status) == 7, "a #! script runs under its interpreter with its path and arguments");
    file = open("/tmp/orphan-script", O_CREAT | O_WRONLY | O_TRUNC, 0755);
    check(write(file, "#!/no/such/shell\n", 17) == 17, "write a script with a missing interpreter");
    close(file);
    check(execve("/tmp/orphan-script", echo, 0) == -1 && errno == ENOENT, "a script's missing interpreter is ENOENT");
    file = open("/tmp/self-script", O_CREAT | O_WRONLY | O_TRUNC, 0755);
    check(write(file, "#!/tmp/self-script\n", 19) == 19, "write a script that names itself");
    close(file);
    check(execve("/tmp/self-script", echo, 0) == -1 && errno == ELOOP, "a script naming itself is ELOOP");
    unlink("/tmp/script");
    unlink("/tmp/orphan-script");
    unlink("/tmp/self-script");

    /* posix_spawn and system: musl starts them with clone(CLONE_VM |
       CLONE_VFORK); a failed execve comes back as posix_spawn's error. */
    pid_t spawned = -1;
    char *const spawn_true[] = {"busybox", "true", 0};
    check(posix_spawn(&spawned, "/bin/busybox", 0, 0, spawn_true, (char *const[]){0}) == 0 && spawned > 0,
          "posix_spawn starts a program");
    check(waitpid(spawned, &status, 0) == spawned && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the spawned program exits 0");
    check(posix_spawn(&spawned, "/no/such/program", 0, 0, spawn_true, (char *const[]){0}) == ENOENT,
          "posix_spawn of a missing program says ENOENT");
    status = system("exit 3");
    check(WIFEXITED(status) && WEXITSTATUS(status) == 3, "system runs the shell and gives its status");

    /* Bad pointers, hidden from the compiler's checks by a volatile. */
    volatile unsigned long bad = 16;
    check(execve((const char *)bad, echo, 0) == -1 && errno == EFAULT, "a bad path pointer is EFAULT");
    check(execve("/bin/busybox", (char *const *)bad, 0) == -1 && errno == EFAULT, "a bad argv is EFAULT");

    if (failures == 0) printf("execs: ok\n");
    return failures == 0 ? 0 : 1;
}
