/* A user program for the tests: the kernel's Appel-Li fault-handling
   extension (kernel/src/appel_li.rs), configured with Spindle's
   application-specific system call, handles this program's protection
   faults in the kernel: a store to a protected page completes without a
   signal, with the exact number of faults counted; in "swap" mode one page
   of the region is writable at a time; once the handler is removed the
   same store ends the (child) process with SIGSEGV. Bad arguments give
   EINVAL. Prints "appel: ok" and exits 0, or says what was wrong and
   exits 1. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define VM_HANDLER 0x53500001L
enum { REMOVE = 0, UNPROTECT = 1, SWAP = 2, QUERY_FAULTS = 100 };
enum { PAGES = 8, PAGE = 4096 };

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("appel: FAILED: %s\n", what);
        failures++;
    }
}

static long vm_handler(long action, char *start, char *end, char *page) {
    return syscall(VM_HANDLER, action, start, end, page);
}

int main(void) {
    char *region = mmap(0, PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return 1;
    for (int i = 0; i < PAGES; i++) region[i * PAGE] = 1;

    check(mprotect(region, PAGES * PAGE, PROT_READ) == 0, "mprotect read-only");
    check(vm_handler(UNPROTECT, region, region + PAGES * PAGE, 0) == 0, "installing the handler");
    for (int i = 0; i < PAGES; i++) region[i * PAGE] = 2; /* each faults once */
    for (int i = 0; i < PAGES; i++) region[i * PAGE + 1] = 3; /* none faults */
    check(vm_handler(QUERY_FAULTS, 0, 0, 0) == PAGES, "one fault handled per page");
    check(region[0] == 2 && region[PAGE + 1] == 3, "the stores completed");

    /* Swap: one writable page at a time. */
    check(mprotect(region + PAGE, (PAGES - 1) * PAGE, PROT_READ) == 0, "protect all but the first");
    check(vm_handler(SWAP, region, region + PAGES * PAGE, region) == 0, "installing the swap handler");
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < PAGES; i++) region[i * PAGE] = (char)round;
    check(vm_handler(QUERY_FAULTS, 0, 0, 0) == 3 * PAGES - 1, "a fault per page change");
    unsigned char resident[PAGES];
    check(mincore(region, PAGES * PAGE, resident) == 0 && (resident[0] & resident[PAGES - 1] & 1),
          "mincore sees the pages resident");

    /* Removed, the extension no longer answers: a store to a protected
       page ends the child that makes it. */
    check(vm_handler(REMOVE, 0, 0, 0) == 0, "removing the handler");
    check(mprotect(region, PAGES * PAGE, PROT_READ) == 0, "mprotect read-only again");
    pid_t child = fork();
    if (child == 0) {
        region[0] = 9;
        _exit(0);
    }
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
          "without the handler the store ends the child with SIGSEGV");

    errno = 0;
    check(vm_handler(UNPROTECT, region + 1, region + PAGE, 0) == -1 && errno == EINVAL,
          "an unaligned region gives EINVAL");
    errno = 0;
    check(vm_handler(77, region, region + PAGE, 0) == -1 && errno == EINVAL, "an unknown action gives EINVAL");
    errno = 0;
    check(vm_handler(QUERY_FAULTS, 0, 0, 0) == -1 && errno == EINVAL, "no handler to query gives EINVAL");
    if (failures) return 1;
    printf("appel: ok\n");
    return 0;
}
