/* A user program for the tests: shared memory. Anonymous shared memory
   (MAP_SHARED | MAP_ANONYMOUS, and a shared mapping of /dev/zero) is
   shared with forked children, pages touched before the fork and after it
   alike, and stays shared through mprotect and a moving mremap. A shared
   mapping of a file is shared by every process that maps the file, msync
   writes it back, and so does the last munmap or the exit of the last
   process mapping it, without growing the file; read and write see the
   mappings' bytes and the mappings theirs at once; a file opened read-only
   cannot be mapped shared and writable. Prints "sharedmem: ok" and exits
   0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("sharedmem: FAILED: %s\n", what);
        failures++;
    }
}

/* Forks a child that runs `work(memory)` and exits with its result;
   whether it exited 0. */
static int in_child(int (*work)(volatile char *), volatile char *memory) {
    pid_t child = fork();
    if (child == 0)
        _exit(work(memory));
    int status = 0;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int child_reads_and_writes(volatile char *memory) {
    if (memory[0] != 'p')
        return 1;
    memory[4096] = 'c';     /* touched by the parent before the fork */
    memory[2 * 4096] = 'C'; /* touched by nobody before */
    return 0;
}

static int child_writes_again(volatile char *memory) {
    memory[0] = 'x';
    return 0;
}

static int child_writes_moved(volatile char *memory) {
    /* Within the memory's three pages: past them is past the object (as
       on Linux, whose shared memory keeps its size). */
    memory[2 * 4096 + 1] = 'm';
    return memory[4096] == 'c' ? 0 : 1;
}

static const char *path = "/tmp/sharedmem.txt";

static int child_writes_file(volatile char *unused) {
    (void)unused;
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return 1;
    char *file = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (file == MAP_FAILED)
        return 2;
    memcpy(file, "HELLO", 5);
    return 0;
}

static int child_writes_file_and_exits(volatile char *unused) {
    (void)unused;
    int fd = open(path, O_RDWR);
    char *file = fd < 0 ? MAP_FAILED : mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (file == MAP_FAILED)
        return 1;
    memcpy(file + 6, "THERE", 5);
    return 0; /* no msync, no munmap: the exit writes it back */
}

int main(void) {
    /* Anonymous shared memory, one page touched before the fork. */
    volatile char *shared = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    check(shared != MAP_FAILED, "mmap MAP_SHARED | MAP_ANONYMOUS");
    if (shared == MAP_FAILED)
        return 1;
    shared[0] = 'p';
    shared[4096] = 'q';
    check(in_child(child_reads_and_writes, shared), "a child reads and writes shared memory");
    check(shared[4096] == 'c', "the child's write to a page touched before the fork shows in the parent");
    check(shared[2 * 4096] == 'C', "the child's write to a page first touched after the fork shows in the parent");
    /* mprotect read-only and back: still shared, not copied on write. */
    check(mprotect((void *)shared, 3 * 4096, PROT_READ) == 0, "mprotect shared memory read-only");
    check(mprotect((void *)shared, 3 * 4096, PROT_READ | PROT_WRITE) == 0, "mprotect it writable again");
    shared[0] = 'p';
    check(in_child(child_writes_again, shared) && shared[0] == 'x', "shared after mprotect");
    /* A moving mremap keeps it shared. */
    char *blocker = mmap((char *)shared + 3 * 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    check(blocker == (char *)shared + 3 * 4096, "a mapping right after the shared memory");
    volatile char *moved = mremap((void *)shared, 3 * 4096, 6 * 4096, MREMAP_MAYMOVE);
    check(moved != MAP_FAILED && moved != shared, "mremap moves shared memory");
    if (moved != MAP_FAILED) {
        check(moved[0] == 'x' && moved[2 * 4096] == 'C', "moved shared memory keeps its bytes");
        check(in_child(child_writes_moved, moved) && moved[2 * 4096 + 1] == 'm', "moved shared memory is still shared");
        munmap((void *)moved, 6 * 4096);
    }
    munmap(blocker, 4096);

    /* A shared mapping of /dev/zero is shared memory too. */
    int zero = open("/dev/zero", O_RDWR);
    volatile char *zeros = zero < 0 ? MAP_FAILED : mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
    check(zeros != MAP_FAILED, "mmap of /dev/zero, shared");
    if (zeros != MAP_FAILED) {
        zeros[0] = 'p';
        check(zeros[1] == 0, "/dev/zero's shared memory starts zero");
        check(in_child(child_writes_again, zeros) && zeros[0] == 'x', "/dev/zero's shared memory is shared");
    }

    /* A file: every shared mapping sees the others' writes; msync writes
       them back; the file does not grow. */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0 && write(fd, "hello world", 11) == 11, "make a file of 11 bytes");
    char *file = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(file != MAP_FAILED, "mmap of a file, shared and writable");
    if (file != MAP_FAILED) {
        check(memcmp(file, "hello world", 11) == 0 && file[11] == 0, "the mapping reads as the file, zeros after it");
        check(in_child(child_writes_file, 0), "a child maps the file and writes it");
        check(memcmp(file, "HELLO world", 11) == 0, "the child's write shows in the parent's mapping at once");
        /* Coherent with read and write, as on Linux, before any msync. */
        char seen[16] = {0};
        check(pread(fd, seen, 11, 0) == 11 && memcmp(seen, "HELLO world", 11) == 0,
              "read sees a mapping's write at once");
        check(pwrite(fd, "W", 1, 6) == 1 && file[6] == 'W', "a mapping sees write's bytes at once");
        char *private = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        check(private != MAP_FAILED && memcmp(private, "HELLO World", 11) == 0,
              "a private mapping made now holds the shared mappings' writes");
        if (private != MAP_FAILED)
            munmap(private, 4096);
        file[6] = 'w';
        file[100] = 'z'; /* past the end of the file: never written back */
        check(msync(file, 4096, MS_SYNC) == 0, "msync");
        char back[16] = {0};
        check(pread(fd, back, sizeof back, 0) == 11 && memcmp(back, "HELLO world", 11) == 0,
              "after msync the file holds the mapping's bytes, and no more");
        check(munmap(file, 4096) == 0, "munmap");
    }
    check(in_child(child_writes_file_and_exits, 0), "a child maps the file, writes it and exits");
    char back[16] = {0};
    check(pread(fd, back, sizeof back, 0) == 11 && memcmp(back, "HELLO THERE", 11) == 0,
          "the exit of the last process mapping the file wrote it back");
    close(fd);
    /* Opened read-only: no shared writable mapping, now or by mprotect. */
    fd = open(path, O_RDONLY);
    check(mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EACCES,
          "a read-only file cannot be mapped shared and writable: EACCES");
    char *readonly = mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0);
    check(readonly != MAP_FAILED && memcmp(readonly, "HELLO THERE", 11) == 0, "a read-only shared mapping reads the file");
    check(mprotect(readonly, 4096, PROT_READ | PROT_WRITE) == -1 && errno == EACCES,
          "nor made writable by mprotect: EACCES");
    close(fd);
    unlink(path);

    if (failures)
        return 1;
    printf("sharedmem: ok\n");
    return 0;
}
