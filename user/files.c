/* A user program for the tests: the Linux personality's file calls on the
   in-memory file tree. Creates, writes, reads back, seeks, stats, lists,
   renames, links and removes files and directories; checks the errno of
   each error path (EBADF, EFAULT, ENOENT, EEXIST, ENOTDIR, EISDIR,
   ENOTEMPTY, ENAMETOOLONG, ELOOP); checks that fork shares open files
   (one offset) and that files read from the boot archive hold its bytes.
   Prints "files: ok" and exits 0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("files: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* Whether `call` failed with `expected`. */
#define FAILS_WITH(call, expected) ((call) == -1 && errno == (expected))

static int lists(const char *directory, const char *name) {
    DIR *dir = opendir(directory);
    if (!dir) return 0;
    struct dirent *entry;
    int found = 0;
    while ((entry = readdir(dir))) found |= strcmp(entry->d_name, name) == 0;
    closedir(dir);
    return found;
}

int main(void) {
    /* Create, write, read back. */
    check(mkdir("/tmp/t", 0755) == 0, "mkdir /tmp/t");
    check(FAILS_WITH(mkdir("/tmp/t", 0755), EEXIST), "mkdir of an existing directory is EEXIST");
    int fd = open("/tmp/t/a.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    check(fd >= 3, "open O_CREAT gives the lowest free descriptor above stdio");
    const char text[] = "hello, files\n";
    check(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1), "write");
    check(lseek(fd, 0, SEEK_CUR) == (off_t)(sizeof text - 1), "the offset advanced");
    check(lseek(fd, 7, SEEK_SET) == 7, "lseek SEEK_SET");
    char buffer[64] = {0};
    check(read(fd, buffer, sizeof buffer) == 6 && memcmp(buffer, "files\n", 6) == 0, "read from the offset");
    check(read(fd, buffer, sizeof buffer) == 0, "read at the end is 0");
    check(pread(fd, buffer, 5, 0) == 5 && memcmp(buffer, "hello", 5) == 0, "pread");
    check(FAILS_WITH(lseek(fd, -1, SEEK_SET), EINVAL), "a negative offset is EINVAL");
    /* A write far beyond what memory holds fails cleanly (the in-memory
       file would need 128 TiB); it once faulted the kernel's allocator. */
    errno = 0;
    check(pwrite(fd, "x", 1, 0x7fffffffe000L) == -1 && (errno == ENOSPC || errno == EFBIG),
          "a write at offset 2^47 fails with ENOSPC or EFBIG");
    check(fstat(fd, &(struct stat){0}) == 0, "the file is still there after the failed write");

    /* stat and fstat. */
    struct stat st;
    check(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t)(sizeof text - 1)
              && (st.st_mode & 0777) == 0644,
          "fstat: a regular file of the written size, mode 0644");
    check(stat("/tmp/t", &st) == 0 && S_ISDIR(st.st_mode), "stat of a directory");
    check(FAILS_WITH(stat("/tmp/none", &st), ENOENT), "stat of a missing file is ENOENT");
    check(FAILS_WITH(stat("/tmp/t/a.txt/x", &st), ENOTDIR), "a file as a directory is ENOTDIR");

    /* Descriptors: dup, dup2, fcntl, bad ones. */
    int copy = dup(fd);
    check(copy == fd + 1, "dup gives the next free descriptor");
    check(lseek(copy, 0, SEEK_SET) == 0 && lseek(fd, 0, SEEK_CUR) == 0, "a dup shares the offset");
    check(dup2(fd, 10) == 10 && fcntl(10, F_GETFD) == 0, "dup2 to 10, without FD_CLOEXEC");
    check(fcntl(10, F_SETFD, FD_CLOEXEC) == 0 && fcntl(10, F_GETFD) == FD_CLOEXEC, "F_SETFD");
    check(close(10) == 0 && FAILS_WITH(close(10), EBADF), "closing twice is EBADF");
    check(FAILS_WITH(write(99, "x", 1), EBADF), "write to a descriptor never opened is EBADF");
    lseek(fd, 0, SEEK_SET);
    check(FAILS_WITH(read(fd, (void *)16, 4), EFAULT), "read into a bad pointer is EFAULT");
    check(FAILS_WITH(open((const char *)16, O_RDONLY), EFAULT), "a bad path pointer is EFAULT");
    int reader = open("/tmp/t/a.txt", O_RDONLY);
    check(FAILS_WITH(write(reader, "x", 1), EBADF), "write to a read-only descriptor is EBADF");
    close(reader);

    /* fork shares open files: the child's read moves the parent's offset. */
    lseek(fd, 0, SEEK_SET);
    pid_t child = fork();
    if (child == 0) {
        char c[6];
        _exit(read(fd, c, 6) == 6 ? 0 : 1);
    }
    int status = -1;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child read through the inherited descriptor");
    check(lseek(fd, 0, SEEK_CUR) == 6, "the child's read moved the shared offset");
    close(copy);

    /* sendfile: from an offset given (which advances, the file's own does
       not), and from the file's own offset. */
    int sent = open("/tmp/t/sent.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    off_t from = 7;
    check(sendfile(sent, fd, &from, 100) == 6 && from == 13, "sendfile from an offset copies to the end");
    check(lseek(fd, 0, SEEK_CUR) == 6, "sendfile with an offset leaves the file's own alone");
    check(sendfile(sent, fd, NULL, 3) == 3 && lseek(fd, 0, SEEK_CUR) == 9, "sendfile from the file's offset moves it");
    check(pread(sent, buffer, 9, 0) == 9 && memcmp(buffer, "files\n fi", 9) == 0, "sendfile wrote what it read");
    check(FAILS_WITH(sendfile(sent, 99, NULL, 1), EBADF), "sendfile from a bad descriptor is EBADF");
    close(sent);
    unlink("/tmp/t/sent.txt");
    close(fd);

    /* Directories: list, rename, link, symlink, remove. */
    check(lists("/tmp/t", "a.txt"), "getdents64 lists the new file");
    check(rename("/tmp/t/a.txt", "/tmp/t/b.txt") == 0, "rename");
    check(!lists("/tmp/t", "a.txt") && lists("/tmp/t", "b.txt"), "the rename shows in the listing");
    check(link("/tmp/t/b.txt", "/tmp/t/c.txt") == 0 && stat("/tmp/t/b.txt", &st) == 0 && st.st_nlink == 2,
          "a hard link counts two links");
    check(symlink("b.txt", "/tmp/t/l") == 0, "symlink");
    char target[32] = {0};
    check(readlink("/tmp/t/l", target, sizeof target) == 5 && memcmp(target, "b.txt", 5) == 0, "readlink");
    check(lstat("/tmp/t/l", &st) == 0 && S_ISLNK(st.st_mode), "lstat sees the link");
    check(stat("/tmp/t/l", &st) == 0 && S_ISREG(st.st_mode), "stat follows the link");
    check(symlink("loop", "/tmp/t/loop") == 0 && FAILS_WITH(open("/tmp/t/loop", O_RDONLY), ELOOP),
          "a symlink loop is ELOOP");
    check(FAILS_WITH(rmdir("/tmp/t"), ENOTEMPTY), "rmdir of a full directory is ENOTEMPTY");
    check(FAILS_WITH(unlink("/tmp/t"), EISDIR), "unlink of a directory is EISDIR");
    char long_name[300];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    check(FAILS_WITH(open(long_name, O_RDONLY), ENAMETOOLONG), "a 299-byte name is ENAMETOOLONG");

    /* The current directory. */
    check(chdir("/tmp/t") == 0, "chdir");
    char cwd[64] = {0};
    check(getcwd(cwd, sizeof cwd) && strcmp(cwd, "/tmp/t") == 0, "getcwd after chdir");
    check(access("c.txt", R_OK) == 0, "a relative path from the new directory");
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    check(dir >= 0 && faccessat(dir, "t/b.txt", F_OK, 0) == 0, "faccessat from a directory descriptor");
    check(FAILS_WITH(openat(dir, "t/b.txt", O_RDONLY | O_DIRECTORY), ENOTDIR), "O_DIRECTORY on a file");
    close(dir);
    check(unlink("b.txt") == 0 && unlink("c.txt") == 0 && unlink("l") == 0 && unlink("loop") == 0,
          "unlink the files");
    check(chdir("/") == 0 && rmdir("/tmp/t") == 0, "rmdir of the emptied directory");

    /* Devices and the boot archive. */
    int null = open("/dev/null", O_RDWR);
    check(null >= 0 && write(null, "x", 1) == 1 && read(null, buffer, 8) == 0, "/dev/null");
    int zero = open("/dev/zero", O_RDONLY);
    memset(buffer, 1, 8);
    check(zero >= 0 && read(zero, buffer, 8) == 8 && buffer[0] == 0 && buffer[7] == 0, "/dev/zero");
    int self = open("/bin/files", O_RDONLY);
    unsigned char magic[4] = {0};
    check(self >= 0 && read(self, magic, 4) == 4 && magic[0] == 0x7f && magic[1] == 'E', "this program's ELF header from the file tree");
    struct utsname name;
    check(uname(&name) == 0 && strcmp(name.sysname, "Linux") == 0 && strcmp(name.machine, "x86_64") == 0, "uname");

    if (failures == 0) printf("files: ok\n");
    return failures == 0 ? 0 : 1;
}
