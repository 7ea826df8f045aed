/* A user program for the page-cache test: its pages come from the page
   cache, shared with every other run of it, so nothing one run writes may
   reach another. Each run checks that its initialized data and its
   read-only data read as the file has them, then writes to both (the
   read-only page after mprotect makes it writable) and has a forked child
   write to the data too: every write must land in a private copy. Run it
   twice: the second run fails if the first run's writes reached the
   cached pages. Prints "sharedpages: ok" and exits 0, or says what was
   wrong and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Initialized data (a writable segment) and read-only data, each filling
   more than a page so that whole pages of them come from the cache. */
static int data[2048] = {41, [2047] = 43};
static const char text[8192] = "read-only text of the program file";

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("sharedpages: FAILED: %s\n", what);
        failures++;
    }
}

int main(void) {
    check(data[0] == 41 && data[2047] == 43, "initialized data reads as the file has it");
    check(strcmp(text, "read-only text of the program file") == 0,
          "read-only data reads as the file has it");
    data[0]++;
    data[2047]++;
    pid_t child = fork();
    if (child == 0) {
        data[0] += 10;
        _exit(data[0] == 52 ? 0 : 1);
    }
    int status = 0;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "a forked child writes its own copy of the data");
    check(data[0] == 42 && data[2047] == 44, "the child's write stays the child's");
    /* The page holding the start of `text`, made writable and written. */
    uintptr_t page = (uintptr_t)text & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) == 0) {
        ((volatile char *)text)[0] = 'R';
        check(((volatile const char *)text)[0] == 'R', "a read-only page made writable takes a write");
    } else {
        check(0, "mprotect makes a read-only page of the program writable");
    }
    if (failures)
        return 1;
    printf("sharedpages: ok\n");
    return 0;
}
