/* A user program for the tests: the Linux personality's select and
   pselect6 (a ready pipe, a timeout that runs out and is written back,
   EBADF, EFAULT, EINVAL), times, sysinfo and getrusage (processor time of
   the program and of a waited-for child; memory as /proc/meminfo says
   it), utimensat and the older utimes/futimesat/utime (stat shows the
   times set; UTIME_NOW, UTIME_OMIT), chown/fchown/lchown/fchownat (stat
   shows the owner; set-user-id cleared), getgroups/setgroups, its own
   /proc/self files (stat, cmdline, exe, fd links, status), fsync,
   fdatasync, syncfs and sync, and sched_setaffinity.
   Prints "linuxcalls: ok" and exits 0, or says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("linuxcalls: FAILED: %s (errno %d)\n", what, errno);
        failures++;
    }
}

/* Whether `call` failed with `expected`. */
#define FAILS_WITH(call, expected) ((call) == -1 && errno == (expected))

/* A pointer no program has mapped. */
#define BAD_POINTER ((void *)1)

static long long now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* Keeps the processor busy for `ms` milliseconds. */
static void spin_ms(long ms) {
    long long end = now_ns() + ms * 1000000LL;
    volatile unsigned long sink = 0;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++) sink += i;
}

/* The whole of a small file, NUL-terminated; its length. */
static long slurp(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long total = 0, got;
    while (total < (long)size - 1 && (got = read(fd, buffer + total, size - 1 - total)) > 0) total += got;
    close(fd);
    buffer[total] = 0;
    return total;
}

static void selects(void) {
    int p[2];
    check(pipe(p) == 0, "pipe");
    fd_set read_set, write_set, except_set;
    struct timeval tv = {0, 0};

    /* Nothing to read: a zero timeout returns 0 and clears the set. */
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    check(select(p[0] + 1, &read_set, NULL, NULL, &tv) == 0 && !FD_ISSET(p[0], &read_set),
          "select on an empty pipe with a zero timeout returns 0 and clears the set");

    /* A byte written: the read end is readable, the write end writable. */
    check(write(p[1], "x", 1) == 1, "write to the pipe");
    FD_ZERO(&read_set);
    FD_ZERO(&write_set);
    FD_ZERO(&except_set);
    FD_SET(p[0], &read_set);
    FD_SET(p[1], &write_set);
    FD_SET(p[0], &except_set);
    /* The system call itself (musl's select passes a copy of the
       timeout, glibc's the caller's): the kernel writes the time left. */
    tv = (struct timeval){1, 0};
    check(syscall(SYS_select, p[1] + 1, &read_set, &write_set, &except_set, &tv) == 2,
          "select counts a readable and a writable end");
    check(FD_ISSET(p[0], &read_set) && FD_ISSET(p[1], &write_set) && !FD_ISSET(p[0], &except_set),
          "select leaves the ready bits and clears the others");
    check(tv.tv_sec == 0 ? tv.tv_usec > 0 : (tv.tv_sec == 1 && tv.tv_usec == 0),
          "select writes back the time left (nearly all of it)");

    /* A timeout that runs out: 0, the set cleared, no time left. */
    char byte;
    check(read(p[0], &byte, 1) == 1, "read the byte back");
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    tv = (struct timeval){0, 50000};
    long long start = now_ns();
    int ready = syscall(SYS_select, p[0] + 1, &read_set, NULL, NULL, &tv);
    long long waited_ms = (now_ns() - start) / 1000000;
    check(ready == 0 && !FD_ISSET(p[0], &read_set), "select times out with nothing ready");
    check(waited_ms >= 50, "select waited its 50 ms");
    check(tv.tv_sec == 0 && tv.tv_usec == 0, "an expired timeout is written back as zero");

    /* pselect6 (musl's pselect): ready, then a timeout, then a bad mask size. */
    check(write(p[1], "y", 1) == 1, "write again");
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    struct timespec ts = {1, 0};
    sigset_t mask;
    sigemptyset(&mask);
    check(pselect(p[0] + 1, &read_set, NULL, NULL, &ts, &mask) == 1 && FD_ISSET(p[0], &read_set),
          "pselect sees the readable end");
    check(read(p[0], &byte, 1) == 1 && byte == 'y', "read it");
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    ts = (struct timespec){0, 20000000};
    start = now_ns();
    check(pselect(p[0] + 1, &read_set, NULL, NULL, &ts, NULL) == 0 && (now_ns() - start) >= 20000000LL,
          "pselect times out after 20 ms");
    struct timespec raw_ts = {0, 0};
    unsigned long long raw_mask = 0;
    long mask_argument[2] = {(long)&raw_mask, 7};
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    check(FAILS_WITH(syscall(SYS_pselect6, p[0] + 1, &read_set, 0, 0, &raw_ts, mask_argument), EINVAL),
          "pselect6 with a signal mask of 7 bytes is EINVAL");
    mask_argument[1] = 8;
    check(syscall(SYS_pselect6, p[0] + 1, &read_set, 0, 0, &raw_ts, mask_argument) == 0,
          "pselect6 with an 8-byte mask and a zero timeout returns 0");
    raw_ts.tv_nsec = 1000000000;
    check(FAILS_WITH(syscall(SYS_pselect6, p[0] + 1, &read_set, 0, 0, &raw_ts, 0), EINVAL),
          "pselect6 with 10^9 nanoseconds is EINVAL");
    raw_ts.tv_nsec = 0;

    /* Errors. */
    FD_ZERO(&read_set);
    FD_SET(100, &read_set);
    tv = (struct timeval){0, 0};
    check(FAILS_WITH(select(101, &read_set, NULL, NULL, &tv), EBADF), "select of a descriptor never opened is EBADF");
    check(FAILS_WITH(syscall(SYS_select, p[0] + 1, BAD_POINTER, 0, 0, &tv), EFAULT), "select of an unmapped set is EFAULT");
    check(FAILS_WITH(syscall(SYS_select, 1, 0, 0, 0, BAD_POINTER), EFAULT), "select of an unmapped timeout is EFAULT");
    check(FAILS_WITH(syscall(SYS_pselect6, p[0] + 1, BAD_POINTER, 0, 0, &raw_ts, 0), EFAULT),
          "pselect6 of an unmapped set is EFAULT");
    check(FAILS_WITH(syscall(SYS_select, -1, 0, 0, 0, &tv), EINVAL), "select with nfds -1 is EINVAL");
    /* select(2) says EINVAL beyond RLIMIT_NOFILE (Linux itself cuts nfds
       down to its descriptor table's size). */
    check(FAILS_WITH(syscall(SYS_select, 5000, 0, 0, 0, &tv), EINVAL), "select with nfds beyond the limit is EINVAL");
    tv = (struct timeval){-1, 0};
    check(FAILS_WITH(syscall(SYS_select, 0, 0, 0, 0, &tv), EINVAL), "select with a negative timeout is EINVAL");

    /* The other end gone: the read end is readable (end of file). */
    close(p[1]);
    FD_ZERO(&read_set);
    FD_SET(p[0], &read_set);
    tv = (struct timeval){0, 0};
    check(select(p[0] + 1, &read_set, NULL, NULL, &tv) == 1, "a pipe without writers is readable");
    close(p[0]);
}

static void times_and_usage(void) {
    struct tms before, after;
    clock_t start = times(&before);
    check(start != (clock_t)-1, "times");
    spin_ms(100);
    clock_t end = times(&after);
    check(end - start >= 9, "times' return value counts clock ticks (100 a second)");
    check(after.tms_utime + after.tms_stime - before.tms_utime - before.tms_stime >= 5,
          "100 ms of processor time show in tms_utime");
    check(times(NULL) != (clock_t)-1, "times(NULL) only returns the clock");
    check(FAILS_WITH(syscall(SYS_times, BAD_POINTER), EFAULT), "times of an unmapped buffer is EFAULT");

    pid_t child = fork();
    if (child == 0) {
        spin_ms(60);
        _exit(0);
    }
    int status = -1;
    check(waitpid(child, &status, 0) == child && status == 0, "the busy child ends");
    check(times(&after) != (clock_t)-1 && after.tms_cutime >= 3, "a waited-for child's processor time shows in tms_cutime");

    struct rusage usage;
    check(getrusage(RUSAGE_SELF, &usage) == 0, "getrusage(RUSAGE_SELF)");
    check(usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec >= 50000, "ru_utime counts the 100 ms");
    check(usage.ru_maxrss > 0 && usage.ru_minflt > 0, "ru_maxrss and ru_minflt are set");
    check(getrusage(RUSAGE_CHILDREN, &usage) == 0 && usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec >= 30000,
          "getrusage(RUSAGE_CHILDREN) counts the child");
    check(getrusage(RUSAGE_THREAD, &usage) == 0, "getrusage(RUSAGE_THREAD)");
    check(FAILS_WITH(getrusage(5, &usage), EINVAL), "getrusage of who 5 is EINVAL");
    check(FAILS_WITH(syscall(SYS_getrusage, RUSAGE_SELF, BAD_POINTER), EFAULT), "getrusage to an unmapped buffer is EFAULT");
}

/* The figure of `label` in /proc/meminfo, in kB. */
static long meminfo_kb(const char *meminfo, const char *label) {
    const char *line = strstr(meminfo, label);
    return line ? strtol(line + strlen(label), NULL, 10) : -1;
}

static void system_info(void) {
    char meminfo[2048];
    check(slurp("/proc/meminfo", meminfo, sizeof meminfo) > 0, "read /proc/meminfo");
    struct sysinfo info;
    check(sysinfo(&info) == 0, "sysinfo");
    check(info.mem_unit == 1, "sysinfo counts memory in bytes");
    check((long)(info.totalram / 1024) == meminfo_kb(meminfo, "MemTotal:"), "sysinfo's totalram is /proc/meminfo's MemTotal");
    long free_kb = meminfo_kb(meminfo, "MemFree:");
    long difference = (long)(info.freeram / 1024) - free_kb;
    check(difference < 1024 && difference > -1024, "sysinfo's freeram is /proc/meminfo's MemFree (within 1 MiB)");
    check(info.freeram < info.totalram && info.freeram > 0, "free memory is some of the total");
    check(info.totalswap == 0 && info.freeswap == 0, "no swap");
    check(info.uptime >= 1 && info.procs >= 1, "an uptime and a process");
    check(FAILS_WITH(syscall(SYS_sysinfo, BAD_POINTER), EFAULT), "sysinfo to an unmapped buffer is EFAULT");
}

static void file_times(void) {
    const char *path = "/tmp/lc/f";
    check(mkdir("/tmp/lc", 0755) == 0, "mkdir /tmp/lc");
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    check(fd >= 0, "create /tmp/lc/f");
    struct timespec set[2] = {{1000, 5}, {2000, 6}};
    struct stat st;
    check(utimensat(AT_FDCWD, path, set, 0) == 0, "utimensat with two times");
    check(stat(path, &st) == 0 && st.st_atim.tv_sec == 1000 && st.st_atim.tv_nsec == 5 && st.st_mtim.tv_sec == 2000 &&
              st.st_mtim.tv_nsec == 6,
          "stat shows the times utimensat set, to the nanosecond");
    struct timespec now_and_omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    check(utimensat(AT_FDCWD, path, now_and_omit, 0) == 0, "utimensat with UTIME_OMIT and UTIME_NOW");
    check(stat(path, &st) == 0 && st.st_atim.tv_sec == 1000 && labs(st.st_mtim.tv_sec - time(NULL)) <= 2,
          "UTIME_OMIT keeps the access time, UTIME_NOW sets the modification time to now");
    struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    check(utimensat(AT_FDCWD, "/tmp/lc/none", omit, 0) == 0, "two UTIME_OMIT do nothing, not even look the path up");
    struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
    check(FAILS_WITH(utimensat(AT_FDCWD, path, bad, 0), EINVAL), "10^9 nanoseconds are EINVAL");
    check(FAILS_WITH(utimensat(AT_FDCWD, "/tmp/lc/none", NULL, 0), ENOENT), "utimensat of a missing file is ENOENT");
    check(FAILS_WITH(syscall(SYS_utimensat, AT_FDCWD, path, BAD_POINTER, 0), EFAULT), "utimensat of unmapped times is EFAULT");
    check(FAILS_WITH(utimensat(AT_FDCWD, path, NULL, 0x8000), EINVAL), "utimensat with an unknown flag is EINVAL");

    /* futimens (utimensat on the descriptor), and a link left alone. */
    struct timespec third[2] = {{3000, 0}, {4000, 0}};
    check(futimens(fd, third) == 0 && fstat(fd, &st) == 0 && st.st_atim.tv_sec == 3000 && st.st_mtim.tv_sec == 4000,
          "futimens sets the descriptor's file's times");
    check(symlink(path, "/tmp/lc/link") == 0, "symlink");
    struct timespec fifth[2] = {{5000, 0}, {5000, 0}};
    check(utimensat(AT_FDCWD, "/tmp/lc/link", fifth, AT_SYMLINK_NOFOLLOW) == 0, "utimensat of a link itself");
    check(lstat("/tmp/lc/link", &st) == 0 && st.st_mtim.tv_sec == 5000 && stat(path, &st) == 0 && st.st_mtim.tv_sec == 4000,
          "AT_SYMLINK_NOFOLLOW changes the link, not its target");

    /* The older calls: utimes and futimesat (timevals), utime (seconds). */
    struct timeval tv[2] = {{6000, 7}, {7000, 8}};
    check(syscall(SYS_utimes, path, tv) == 0 && stat(path, &st) == 0 && st.st_atim.tv_sec == 6000 &&
              st.st_atim.tv_nsec == 7000 && st.st_mtim.tv_sec == 7000 && st.st_mtim.tv_nsec == 8000,
          "utimes sets microseconds");
    tv[0].tv_usec = 1000000;
    check(FAILS_WITH(syscall(SYS_utimes, path, tv), EINVAL), "utimes with 10^6 microseconds is EINVAL");
    int directory = open("/tmp/lc", O_RDONLY | O_DIRECTORY);
    struct timeval tv2[2] = {{8000, 0}, {9000, 0}};
    check(syscall(SYS_futimesat, directory, "f", tv2) == 0 && stat(path, &st) == 0 && st.st_mtim.tv_sec == 9000,
          "futimesat relative to a directory");
    close(directory);
    struct utimbuf seconds = {10000, 11000};
    check(utime(path, &seconds) == 0 && stat(path, &st) == 0 && st.st_atim.tv_sec == 10000 && st.st_mtim.tv_sec == 11000,
          "utime sets seconds");
    check(syscall(SYS_utime, path, NULL) == 0 && stat(path, &st) == 0 && labs(st.st_mtim.tv_sec - time(NULL)) <= 2 &&
              labs(st.st_atim.tv_sec - time(NULL)) <= 2,
          "utime(NULL) sets both times to now");
    close(fd);
}

static void owners(void) {
    const char *path = "/tmp/lc/f";
    struct stat st;
    check(chown(path, 1000, 2000) == 0 && stat(path, &st) == 0 && st.st_uid == 1000 && st.st_gid == 2000,
          "stat shows the owner chown set");
    check(chown(path, -1, 3000) == 0 && stat(path, &st) == 0 && st.st_uid == 1000 && st.st_gid == 3000,
          "chown with -1 keeps the owner");
    int fd = open(path, O_RDONLY);
    check(fchown(fd, 5, -1) == 0 && fstat(fd, &st) == 0 && st.st_uid == 5 && st.st_gid == 3000, "fchown");
    check(FAILS_WITH(fchown(99, 0, 0), EBADF), "fchown of a descriptor never opened is EBADF");
    close(fd);
    check(lchown("/tmp/lc/link", 7, 8) == 0 && lstat("/tmp/lc/link", &st) == 0 && st.st_uid == 7 && st.st_gid == 8 &&
              stat(path, &st) == 0 && st.st_uid == 5,
          "lchown changes the link, not its target");
    check(fchownat(AT_FDCWD, "/tmp/lc/link", 9, 9, 0) == 0 && stat(path, &st) == 0 && st.st_uid == 9,
          "fchownat follows a link without AT_SYMLINK_NOFOLLOW");
    check(FAILS_WITH(fchownat(AT_FDCWD, path, 0, 0, 0x8000), EINVAL), "fchownat with an unknown flag is EINVAL");
    check(FAILS_WITH(chown("/tmp/lc/none", 0, 0), ENOENT), "chown of a missing file is ENOENT");
    check(FAILS_WITH(syscall(SYS_chown, BAD_POINTER, 0, 0), EFAULT), "chown of an unmapped path is EFAULT");
    /* A change of owner clears set-user-id, and set-group-id when the
       group may execute. */
    check(chmod(path, 04755) == 0 && chown(path, 0, 0) == 0 && stat(path, &st) == 0 && (st.st_mode & 07777) == 0755,
          "chown clears set-user-id");
    check(chmod(path, 02755) == 0 && chown(path, -1, -1) == 0 && stat(path, &st) == 0 && (st.st_mode & 07777) == 0755,
          "chown clears set-group-id of a group-executable file");
    check(chmod(path, 02745) == 0 && chown(path, 0, 0) == 0 && stat(path, &st) == 0 && (st.st_mode & 07777) == 02745,
          "chown keeps set-group-id without group execute");
}

static void groups(void) {
    gid_t list[8];
    check(getgroups(0, NULL) == 0, "a program the kernel started has no supplementary groups");
    gid_t wanted[3] = {30, 10, 20};
    check(setgroups(3, wanted) == 0, "setgroups");
    check(getgroups(0, NULL) == 3, "getgroups(0) counts them");
    check(getgroups(8, list) == 3 && list[0] == 10 && list[1] == 20 && list[2] == 30, "getgroups gives them sorted");
    check(FAILS_WITH(getgroups(2, list), EINVAL), "getgroups with too small a list is EINVAL");
    check(FAILS_WITH(syscall(SYS_getgroups, 8, BAD_POINTER), EFAULT), "getgroups to an unmapped list is EFAULT");
    check(FAILS_WITH(syscall(SYS_setgroups, 1, BAD_POINTER), EFAULT), "setgroups from an unmapped list is EFAULT");
    check(FAILS_WITH(syscall(SYS_setgroups, -1, list), EINVAL), "setgroups of -1 groups is EINVAL");
    char status[2048];
    check(slurp("/proc/self/status", status, sizeof status) > 0 && strstr(status, "\nGroups:\t10 20 30 \n"),
          "/proc/self/status lists the groups");
    pid_t child = fork();
    if (child == 0) _exit(getgroups(8, list) == 3 && list[2] == 30 ? 0 : 1);
    int code = -1;
    check(waitpid(child, &code, 0) == child && code == 0, "a forked child has its parent's groups");
}

static void own_proc_files(int argc, char **argv) {
    char text[4096], expected[256];
    /* stat: pid (comm) state ppid. */
    check(slurp("/proc/self/stat", text, sizeof text) > 0, "read /proc/self/stat");
    snprintf(expected, sizeof expected, "%d (linuxcalls) R %d ", getpid(), getppid());
    check(strncmp(text, expected, strlen(expected)) == 0, "/proc/self/stat starts with pid, (comm), R and ppid");
    /* cmdline: argv with NULs. */
    long length = slurp("/proc/self/cmdline", text, sizeof text);
    long want = 0;
    for (int i = 0; i < argc; i++) {
        check(length > want && strcmp(text + want, argv[i]) == 0, "/proc/self/cmdline holds each argument");
        want += strlen(argv[i]) + 1;
    }
    check(length == want, "/proc/self/cmdline is the arguments and nothing more");
    /* exe and fd links. */
    ssize_t got = readlink("/proc/self/exe", text, sizeof text - 1);
    check(got == 15 && memcmp(text, "/bin/linuxcalls", 15) == 0, "/proc/self/exe is /bin/linuxcalls");
    int fd = open("/tmp/lc/f", O_RDONLY);
    snprintf(expected, sizeof expected, "/proc/self/fd/%d", fd);
    got = readlink(expected, text, sizeof text - 1);
    check(got == 9 && memcmp(text, "/tmp/lc/f", 9) == 0, "the descriptor's link names the file");
    check(unlink("/tmp/lc/f") == 0, "unlink the open file");
    got = readlink(expected, text, sizeof text - 1);
    check(got == 19 && memcmp(text, "/tmp/lc/f (deleted)", 19) == 0, "a removed file's link says (deleted)");
    close(fd);
    int p[2];
    struct stat st;
    check(pipe(p) == 0 && fstat(p[0], &st) == 0, "a pipe");
    snprintf(expected, sizeof expected, "/proc/self/fd/%d", p[0]);
    got = readlink(expected, text, sizeof text - 1);
    text[got > 0 ? got : 0] = 0;
    snprintf(expected, sizeof expected, "pipe:[%lu]", (unsigned long)st.st_ino);
    check(strcmp(text, expected) == 0, "a pipe's link is pipe:[inode]");
    close(p[0]);
    close(p[1]);
    check(FAILS_WITH(open("/proc/self/fd/99", O_RDONLY), ENOENT), "a closed descriptor has no link");
    check(FAILS_WITH(mkdir("/proc/new", 0755), ENOENT), "nothing can be made in /proc (ENOENT, as Linux says)");
    /* status: the lines ps and others read. */
    check(slurp("/proc/self/status", text, sizeof text) > 0, "read /proc/self/status");
    snprintf(expected, sizeof expected, "\nPid:\t%d\nPPid:\t%d\n", getpid(), getppid());
    check(strncmp(text, "Name:\tlinuxcalls\n", 17) == 0 && strstr(text, "State:\tR (running)\n") && strstr(text, expected) &&
              strstr(text, "\nVmRSS:\t"),
          "/proc/self/status has Name, State, Pid, PPid and VmRSS");
    rmdir("/tmp/lc/none");
    unlink("/tmp/lc/link");
    check(rmdir("/tmp/lc") == 0, "remove /tmp/lc");
}

/* Files in memory: the sync calls succeed on files and check their
   descriptor; one processor: a mask must allow CPU 0. */
static void syncs_and_affinity(void) {
    int fd = open("/tmp/linuxcalls-sync", O_CREAT | O_RDWR | O_TRUNC, 0600);
    check(fd >= 0 && write(fd, "x", 1) == 1, "a file to sync");
    check(fsync(fd) == 0, "fsync of a file");
    check(fdatasync(fd) == 0, "fdatasync of a file");
    check(syscall(SYS_syncfs, fd) == 0, "syncfs of a file");
    sync();
    close(fd);
    unlink("/tmp/linuxcalls-sync");
    errno = 0;
    check(fsync(fd) == -1 && errno == EBADF, "fsync of a closed descriptor is EBADF");
    int pipes[2];
    check(pipe(pipes) == 0, "pipe");
    errno = 0;
    check(fsync(pipes[0]) == -1 && errno == EINVAL, "fsync of a pipe is EINVAL");
    close(pipes[0]);
    close(pipes[1]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    check(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity to CPU 0");
    CPU_ZERO(&set);
    CPU_SET(CPU_SETSIZE - 1, &set);
    errno = 0;
    check(sched_setaffinity(0, sizeof set, &set) == -1 && errno == EINVAL,
          "sched_setaffinity to no processor there is EINVAL");
}

int main(int argc, char **argv) {
    syncs_and_affinity();
    selects();
    times_and_usage();
    system_info();
    file_times();
    owners();
    groups();
    own_proc_files(argc, argv);
    if (failures) {
        printf("linuxcalls: %d checks failed\n", failures);
        return 1;
    }
    printf("linuxcalls: ok\n");
    return 0;
}
