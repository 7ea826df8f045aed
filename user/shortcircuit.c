/* A user program for the tests: a per-application short-circuit. The
   program installs a Wasm module of the boot archive as its own answer to
   getuid (Spindle's call 0x53500003), then sees itself as user 1000 while
   geteuid, and its children, still see root. Also the refusals: a call
   taken already (EEXIST), a missing module (ENOENT), a file that is not
   Wasm (ENOEXEC), a number no program may take (EINVAL), a bad pointer
   (EFAULT). Prints "shortcircuit: ok" and exits 0, or says what was
   wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHORT_CIRCUIT 0x53500003L
#define MODULE "/ext/short-circuit-getuid.wasm"

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("shortcircuit: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

#define FAILS_WITH(call, expected) ((call) == -1 && errno == (expected))

int main(void) {
    check(getuid() == 0, "before: getuid is root's");
    check(syscall(SHORT_CIRCUIT, MODULE, (long)SYS_getuid) == 0, "installing the short-circuit of getuid");
    check(getuid() == 1000, "the module answers getuid");
    check(geteuid() == 0, "geteuid is still the personality's");
    pid_t child = fork();
    if (child == 0) _exit(getuid() == 0 ? 0 : 1);
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "a child's getuid is not short-circuited (the module is the parent's)");
    check(FAILS_WITH(syscall(SHORT_CIRCUIT, MODULE, (long)SYS_getuid), EEXIST), "a second one for getuid is EEXIST");
    check(FAILS_WITH(syscall(SHORT_CIRCUIT, "/ext/missing.wasm", (long)SYS_getgid), ENOENT), "a missing module is ENOENT");
    check(FAILS_WITH(syscall(SHORT_CIRCUIT, "/bin/shortcircuit", (long)SYS_getgid), ENOEXEC), "an ELF file is ENOEXEC");
    check(FAILS_WITH(syscall(SHORT_CIRCUIT, MODULE, 5000L), EINVAL), "call 5000 is EINVAL");
    check(FAILS_WITH(syscall(SHORT_CIRCUIT, (char *)8, (long)SYS_getgid), EFAULT), "a bad path pointer is EFAULT");
    check(getgid() == 0, "getgid was not taken over by the refused attempts");
    if (failures) {
        printf("shortcircuit: %d checks failed\n", failures);
        return 1;
    }
    printf("shortcircuit: ok\n");
    return 0;
}
