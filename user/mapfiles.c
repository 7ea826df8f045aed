/* A user program for the tests: mmap of files, as ld.so maps libraries.
   A private mapping holds the file's bytes from its offset, the part of
   its last page past the end of the file reads as zero, writes to it stay
   private, MAP_FIXED replaces part of an existing mapping, mprotect and
   munmap take access away (checked in children, which must die of
   SIGSEGV), a PROT_NONE mapping keeps the bytes for a later mprotect,
   a fork shares the bytes copy-on-write. A shared mapping reads
   the file (sharedmem.c tests shared mappings further); unaligned
   offsets, pipes, directories, descriptors not open for reading and
   shared writable mappings of descriptors not open for writing are
   refused with Linux's errors; /dev/zero maps zeros.
   Prints "mapfiles: ok" and exits 0, or says what was wrong and exits
   1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Five pages and a bit: the last page of a whole mapping is partly file. */
enum { PAGE = 4096, FILE_BYTES = 5 * PAGE + 1000 };

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("mapfiles: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* The file's byte at `offset`. */
static unsigned char pattern(long offset) { return (unsigned char)(offset * 7 % 251); }

/* Whether `length` bytes at `at` are the file's from `offset`. */
static int holds_file(const unsigned char *at, long offset, long length) {
    for (long index = 0; index < length; index++) {
        if (at[index] != pattern(offset + index)) {
            return 0;
        }
    }
    return 1;
}

static int all_bytes(const unsigned char *at, unsigned char value, long length) {
    for (long index = 0; index < length; index++) {
        if (at[index] != value) {
            return 0;
        }
    }
    return 1;
}

/* Runs `touch` in a child; whether the child died of SIGSEGV. */
static int segfaults(void (*touch)(volatile unsigned char *), volatile unsigned char *at) {
    pid_t child = fork();
    if (child == 0) {
        touch(at);
        _exit(0);
    }
    int status = 0;
    return waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void read_byte(volatile unsigned char *at) { (void)*at; }
static void write_byte(volatile unsigned char *at) { *at = 1; }

int main(void) {
    const char *path = "/tmp/mapfiles.data";
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    check(fd >= 0, "create the file");
    unsigned char bytes[FILE_BYTES];
    for (long index = 0; index < FILE_BYTES; index++) {
        bytes[index] = pattern(index);
    }
    check(write(fd, bytes, FILE_BYTES) == FILE_BYTES, "write the file");

    /* The whole file, read-only: its bytes, then zeros to the page's end. */
    unsigned char *whole = mmap(0, FILE_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
    check(whole != MAP_FAILED, "map the whole file");
    if (whole != MAP_FAILED) {
        check(holds_file(whole, 0, FILE_BYTES), "the mapping holds the file's bytes");
        check(all_bytes(whole + FILE_BYTES, 0, 6 * PAGE - FILE_BYTES), "the last page is zero past the end of the file");
        check(segfaults(write_byte, whole), "a write to a read-only file mapping faults");
        check(munmap(whole, FILE_BYTES) == 0, "munmap the whole file");
        check(segfaults(read_byte, whole), "a read of an unmapped file mapping faults");
    }

    /* From an offset, writable and private: writes do not reach the file. */
    unsigned char *part = mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, PAGE);
    check(part != MAP_FAILED, "map two pages from offset 4096");
    if (part != MAP_FAILED) {
        check(holds_file(part, PAGE, 2 * PAGE), "the mapping holds the file's bytes from its offset");
        memset(part, 0x5a, 16);
        unsigned char back[16];
        check(pread(fd, back, 16, PAGE) == 16 && holds_file(back, PAGE, 16), "a private write does not reach the file");
        /* fork shares the pages copy-on-write. */
        pid_t child = fork();
        if (child == 0) {
            int ok = all_bytes(part, 0x5a, 16) && holds_file(part + 16, PAGE + 16, 100);
            part[20] = 0;
            _exit(ok ? 0 : 1);
        }
        int status = -1;
        check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a forked child sees the mapping as its parent left it");
        check(part[20] == pattern(PAGE + 20), "the child's write stays its own");
        /* RELRO, as ld.so does it: read-only, then faults on writes. */
        check(mprotect(part, PAGE, PROT_READ) == 0, "mprotect a file page read-only");
        check(segfaults(write_byte, part), "a write to the protected page faults");
        check(part[0] == 0x5a && holds_file(part + PAGE, 2 * PAGE, PAGE), "mprotect keeps the bytes");
        check(mprotect(part, PAGE, PROT_READ | PROT_WRITE) == 0, "mprotect it writable again");
        part[1] = 7;
        check(part[1] == 7, "the page is writable again");
        check(munmap(part, 2 * PAGE) == 0, "munmap the part");
    }

    /* PROT_NONE keeps the bytes for a later mprotect. */
    unsigned char *hidden = mmap(0, PAGE, PROT_NONE, MAP_PRIVATE, fd, 3 * PAGE);
    check(hidden != MAP_FAILED, "map a file page PROT_NONE");
    if (hidden != MAP_FAILED) {
        check(segfaults(read_byte, hidden), "a read of a PROT_NONE file page faults");
        check(mprotect(hidden, PAGE, PROT_READ) == 0 && holds_file(hidden, 3 * PAGE, PAGE),
              "mprotect PROT_READ shows the file's bytes");
        munmap(hidden, PAGE);
    }

    /* MAP_FIXED over the middle of an anonymous mapping. */
    unsigned char *area = mmap(0, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(area != MAP_FAILED, "map four anonymous pages");
    if (area != MAP_FAILED) {
        memset(area, 0xaa, 4 * PAGE);
        unsigned char *fixed = mmap(area + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 2 * PAGE);
        check(fixed == area + PAGE, "MAP_FIXED places the file where asked");
        check(holds_file(area + PAGE, 2 * PAGE, PAGE), "the fixed mapping holds the file's third page");
        check(all_bytes(area, 0xaa, PAGE) && all_bytes(area + 2 * PAGE, 0xaa, 2 * PAGE),
              "the pages around the fixed mapping keep their bytes");
        errno = 0;
        check(mmap(area, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0) == MAP_FAILED && errno == EEXIST,
              "MAP_FIXED_NOREPLACE over a mapping is EEXIST");
        check(munmap(area, 4 * PAGE) == 0, "munmap the area");
    }

    /* Shared, read-only: the file's bytes. */
    unsigned char *shared = mmap(0, PAGE, PROT_READ, MAP_SHARED, fd, 0);
    check(shared != MAP_FAILED, "map the file shared, read-only");
    if (shared != MAP_FAILED) {
        check(holds_file(shared, 0, PAGE), "the shared mapping holds the file's bytes");
        munmap(shared, PAGE);
    }

    /* The refusals. */
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED && errno == EINVAL,
          "an unaligned offset is EINVAL");
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, MAP_PRIVATE, 999, 0) == MAP_FAILED && errno == EBADF,
          "a closed descriptor is EBADF");
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, 0, fd, 0) == MAP_FAILED && errno == EINVAL,
          "neither shared nor private is EINVAL");
    int writer = open(path, O_WRONLY);
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, MAP_PRIVATE, writer, 0) == MAP_FAILED && errno == EACCES,
          "a descriptor not open for reading is EACCES");
    close(writer);
    int reader = open(path, O_RDONLY);
    errno = 0;
    check(mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, reader, 0) == MAP_FAILED && errno == EACCES,
          "a shared writable mapping of a read-only descriptor is EACCES");
    close(reader);
    int ends[2];
    check(pipe(ends) == 0, "make a pipe");
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, MAP_PRIVATE, ends[0], 0) == MAP_FAILED && errno == ENODEV, "a pipe is ENODEV");
    close(ends[0]);
    close(ends[1]);
    int directory = open("/tmp", O_RDONLY | O_DIRECTORY);
    errno = 0;
    check(mmap(0, PAGE, PROT_READ, MAP_PRIVATE, directory, 0) == MAP_FAILED && errno == ENODEV,
          "a directory is ENODEV");
    close(directory);

    /* /dev/zero, privately: zeros, writable. */
    int zero = open("/dev/zero", O_RDWR);
    unsigned char *zeros = mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, zero, 0);
    check(zeros != MAP_FAILED && all_bytes(zeros, 0, 2 * PAGE), "/dev/zero maps zeros");
    if (zeros != MAP_FAILED) {
        zeros[5] = 1;
        munmap(zeros, 2 * PAGE);
    }
    close(zero);

    /* The file may go while mapped: the mapping keeps its bytes. */
    unsigned char *kept = mmap(0, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    check(unlink(path) == 0, "remove the file");
    check(kept != MAP_FAILED && holds_file(kept, 0, PAGE), "a mapping outlives its descriptor and name");

    if (failures) {
        return 1;
    }
    printf("mapfiles: ok\n");
    return 0;
}
