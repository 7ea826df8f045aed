/* A user program for the tests: memory a program writes and then runs,
   as Linux allows it to user programs (code generators such as tcc -run,
   JITs, trampolines on an executable stack).
   - An anonymous mapping asked for PROT_READ|PROT_WRITE|PROT_EXEC holds
     code written into it and runs it.
   - A PROT_READ|PROT_WRITE mapping written with code and then made
     PROT_READ|PROT_EXEC with mprotect runs it; writing it afterwards
     faults (checked in a child, which must die of SIGSEGV).
   - Built with `-z execstack` (the line below), so its PT_GNU_STACK asks
     for an executable stack: code copied into a stack buffer runs.
   - A forked child shares the writable-and-executable page
     copy-on-write: its write does not reach the parent's code.
   Prints "wxmemory: ok" and exits 0, or says what was wrong and exits 1.
   musl-gcc: -z execstack */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PAGE = 4096 };

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("wxmemory: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* x86-64 code for `int f(void) { return value; }`: mov eax, imm32; ret. */
static void write_code(unsigned char *at, int value) {
    at[0] = 0xb8;
    memcpy(at + 1, &value, 4);
    at[5] = 0xc3;
}

static int run_code(void *at) {
    /* The code was written as data: the compiler must not drop or defer
       those stores past the call. */
    __asm__ volatile("" : : "r"(at) : "memory");
    int (*function)(void) = (int (*)(void))at;
    return function();
}

/* Whether a child writing to `at` dies of SIGSEGV. */
static int write_faults(unsigned char *at) {
    pid_t child = fork();
    if (child == 0) {
        at[0] = 0x90;
        _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) {
        return 0;
    }
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

int main(void) {
    unsigned char *both = mmap(0, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(both != MAP_FAILED, "mmap PROT_READ|PROT_WRITE|PROT_EXEC");
    if (both != MAP_FAILED) {
        write_code(both, 42);
        check(run_code(both) == 42, "code in a writable and executable mapping");
        /* The child writes its copy; the parent's code is unchanged. */
        pid_t child = fork();
        if (child == 0) {
            write_code(both, 7);
            _exit(run_code(both) == 7 ? 0 : 1);
        }
        int status = 0;
        check(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0,
              "the child's copy runs the child's code");
        check(run_code(both) == 42, "the parent's code after the child wrote its copy");
    }

    unsigned char *later = mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(later != MAP_FAILED, "mmap PROT_READ|PROT_WRITE");
    if (later != MAP_FAILED) {
        write_code(later, 1234);
        check(mprotect(later, PAGE, PROT_READ | PROT_EXEC) == 0, "mprotect written memory to PROT_EXEC");
        check(run_code(later) == 1234, "code written, then made executable");
        check(write_faults(later), "a write to the now read-execute page faults");
        check(mprotect(later, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) == 0,
              "mprotect to PROT_READ|PROT_WRITE|PROT_EXEC");
        write_code(later, 99);
        check(run_code(later) == 99, "code rewritten in place");
    }

    unsigned char on_stack[16];
    write_code(on_stack, 5);
    check(run_code(on_stack) == 5, "code on the executable stack (PT_GNU_STACK)");

    if (failures == 0) {
        printf("wxmemory: ok\n");
        return 0;
    }
    return 1;
}
