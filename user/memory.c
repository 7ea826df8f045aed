/* A user program for the tests: anonymous mmap gives zeroed pages on first
   touch (also to a system call writing into them), munmap and mprotect
   take access away (checked in children, which must die of SIGSEGV), brk
   grows and shrinks, madvise drops pages, mremap shrinks, grows and moves. Prints "memory: ok" and exits 0, or says what was
   wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("memory: FAILED: %s\n", what);
        failures++;
    }
}

/* Runs `touch` in a child; whether the child died of SIGSEGV. */
static int segfaults(void (*touch)(volatile char *), volatile char *at) {
    pid_t child = fork();
    if (child == 0) {
        touch(at);
        _exit(0);
    }
    int status = 0;
    return waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void read_byte(volatile char *at) { (void)*at; }
static void write_byte(volatile char *at) { *at = 1; }

int main(void) {
    enum { SIZE = 1 << 20 };
    char *area = mmap(0, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(area != MAP_FAILED, "mmap of 1 MiB");
    if (area == MAP_FAILED) return 1;
    int zero = 1;
    for (int i = 0; i < SIZE; i += 4096) zero &= area[i] == 0 && area[i + 4095] == 0;
    check(zero, "fresh pages read as zero");
    for (int i = 0; i < SIZE; i += 4096) area[i] = (char)(i >> 12);
    int kept = 1;
    for (int i = 0; i < SIZE; i += 4096) kept &= area[i] == (char)(i >> 12);
    check(kept, "written pages keep their values");

    /* A system call writes into a page the program never touched. */
    struct timespec *fresh = (struct timespec *)(area + SIZE - 4096 * 3);
    check(clock_gettime(CLOCK_MONOTONIC, fresh) == 0, "a system call writes into an untouched page");

    check(mprotect(area, 4096, PROT_READ) == 0, "mprotect read-only");
    check(area[0] == 0, "a read-only page is still readable");
    check(segfaults(write_byte, area), "a write to a read-only page ends the child with SIGSEGV");
    check(mprotect(area, 4096, PROT_NONE) == 0, "mprotect PROT_NONE");
    check(segfaults(read_byte, area), "a read of a PROT_NONE page ends the child with SIGSEGV");
    errno = 0;
    check(write(1, area, 1) == -1 && errno == EFAULT, "a system call reading a PROT_NONE page gives EFAULT");
    check(mprotect(area, 4096, PROT_READ | PROT_WRITE) == 0, "mprotect back to read-write");
    area[0] = 5;
    check(area[0] == 5, "the page is writable again");

    check(munmap(area + 4096, 4096) == 0, "munmap of one page");
    check(segfaults(read_byte, area + 4096), "a read of an unmapped page ends the child with SIGSEGV");
    check(area[8192] == 2, "the pages beside the hole are kept");
    errno = 0;
    check(mprotect(area + 4096, 4096, PROT_READ) == -1 && errno == ENOMEM, "mprotect of a hole gives ENOMEM");
    errno = 0;
    check(munmap(area + 1, 4096) == -1 && errno == EINVAL, "munmap of an unaligned address gives EINVAL");
    /* Writable and executable at once is a user program's right, as on
       Linux (wxmemory.c runs code in such a mapping). */
    void *both = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(both != MAP_FAILED, "a writable and executable mapping is made");
    check(both == MAP_FAILED || munmap(both, 4096) == 0, "munmap of the writable and executable mapping");
    check(munmap(area, SIZE) == 0, "munmap of the rest");
    errno = 0;
    check(mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED
              && errno == EPERM, "a fixed mapping at address 0 is refused with EPERM");

    /* musl's sbrk only reports the break: brk itself moves it. */
    char *start = (char *)syscall(SYS_brk, 0);
    check(syscall(SYS_brk, start + (1 << 16)) == (long)(start + (1 << 16)), "brk grows the break");
    start[0] = 1;
    start[(1 << 16) - 1] = 2;
    check(start[0] == 1 && start[(1 << 16) - 1] == 2, "the grown break is usable");
    check(syscall(SYS_brk, start) == (long)start, "brk shrinks the break");
    check(segfaults(read_byte, start + 4096), "memory beyond a shrunk break is gone");
    check(syscall(SYS_brk, start - (1 << 30)) == (long)start, "brk below its start keeps the break");

    /* madvise: MADV_DONTNEED drops pages (zeros on the next touch); hints
       are accepted; an unaligned address or unknown advice is EINVAL, a
       range not mapped ENOMEM. */
    char *advised = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(advised, 7, 4 * 4096);
    check(madvise(advised, 4096, MADV_DONTNEED) == 0 && advised[0] == 0 && advised[4096] == 7,
          "MADV_DONTNEED zeroes only its range");
    check(madvise(advised, 4 * 4096, MADV_WILLNEED) == 0, "MADV_WILLNEED is accepted");
    check(madvise(advised + 1, 4096, MADV_DONTNEED) == -1 && errno == EINVAL, "an unaligned madvise is EINVAL");
    check(madvise(advised, 4096, 12345) == -1 && errno == EINVAL, "an unknown advice is EINVAL");
    munmap(advised, 4 * 4096);
    check(madvise(advised, 4096, MADV_DONTNEED) == -1 && errno == ENOMEM, "madvise of unmapped memory is ENOMEM");

    /* mremap: shrink; grow in place when the pages after are free (the new
       part zero); ENOMEM when they are not. */
    char *resized = mmap(0, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    resized[0] = 1;
    resized[7 * 4096] = 2;
    check(mremap(resized, 8 * 4096, 4 * 4096, 0) == resized, "mremap shrinks");
    check(segfaults(read_byte, resized + 7 * 4096), "the shrunk tail is gone");
    check(mremap(resized, 4 * 4096, 8 * 4096, 0) == resized && resized[0] == 1 && resized[7 * 4096] == 0,
          "mremap grows in place, the new part zero");
    char *blocker = mmap(resized + 8 * 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    check(blocker == resized + 8 * 4096, "a mapping right after");
    check(mremap(resized, 8 * 4096, 9 * 4096, 0) == MAP_FAILED && errno == ENOMEM,
          "mremap cannot grow into another mapping: ENOMEM");
    /* MREMAP_MAYMOVE: blocked, it moves, its pages with it (contents kept,
       the old place unmapped, the new part zero). */
    resized[4096] = 3;
    char *moved = mremap(resized, 8 * 4096, 16 * 4096, MREMAP_MAYMOVE);
    check(moved != MAP_FAILED && moved != resized, "mremap with MREMAP_MAYMOVE moves a blocked mapping");
    if (moved != MAP_FAILED && moved != resized) {
        check(moved[0] == 1 && moved[4096] == 3 && moved[7 * 4096] == 0 && moved[15 * 4096] == 0,
              "the moved mapping keeps its bytes, the new part zero");
        moved[15 * 4096] = 4;
        check(segfaults(read_byte, resized), "the old place of a moved mapping is unmapped");
        /* MREMAP_FIXED: to a given address, replacing what was there. */
        char *target = mmap(0, 4 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *fixed = mremap(moved, 16 * 4096, 2 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, target);
        check(fixed == target && fixed[0] == 1 && fixed[4096] == 3,
              "mremap with MREMAP_FIXED moves to the address given, bytes kept");
        check(fixed[0] == 1 && (fixed[4096] = 5) == 5, "the moved pages stay writable");
        check(segfaults(read_byte, moved), "the old place after MREMAP_FIXED is unmapped");
        check(mremap(fixed, 2 * 4096, 2 * 4096, MREMAP_FIXED, fixed + 8 * 4096) == MAP_FAILED && errno == EINVAL,
              "MREMAP_FIXED without MREMAP_MAYMOVE is EINVAL");
        check(mremap(fixed, 2 * 4096, 4 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, fixed + 4096) == MAP_FAILED
                  && errno == EINVAL,
              "MREMAP_FIXED onto an overlapping range is EINVAL");
        munmap(fixed, 4 * 4096);
    }
    munmap(resized, 9 * 4096);

    if (failures) return 1;
    printf("memory: ok\n");
    return 0;
}
