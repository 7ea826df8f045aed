/* A user program for the page-cache test: its pages come from the page
   cache, shared with every other run of it, so nothing one run writes may
   reach another. Each run checks that its initialized data and its
   read-only data read as the file has them, then writes to both (the
   read-only page after mprotect makes it writable) and has a forked child
   write to the data too: every write must land in a private copy. Run it
   twice: the second run fails if the first run's writes reached the
   cached pages. The same for a private, writable mmap of its own file
   (/proc/self/exe, a boot-archive file whose pages the cache holds). Prints "sharedpages: ok" and exits 0, or says what was
   wrong and exits 1. */
#include <fcntl.h>
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
    /* The program's own file, mapped private and writable: it reads as
       the file, and a write to it stays in this mapping. */
    int fd = open("/proc/self/exe", O_RDONLY);
    check(fd >= 0, "the program opens its own file");
    if (fd >= 0) {
        char *file = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        check(file != MAP_FAILED, "mmap of the program's file, private and writable");
        if (file != MAP_FAILED) {
            check(memcmp(file, "\x7f" "ELF", 4) == 0, "the mapping reads as the file (ELF magic)");
            file[0] = 'X';
            file[4096] = 'Y';
            check(file[0] == 'X' && file[4096] == 'Y', "the private mapping takes writes");
            char *again = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
            check(again != MAP_FAILED && memcmp(again, "\x7f" "ELF", 4) == 0,
                  "a second mapping of the file does not see the first one's write");
        }
        close(fd);
    }
    if (failures)
        return 1;
    printf("sharedpages: ok\n");
    return 0;
}
