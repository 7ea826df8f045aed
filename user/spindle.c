/* `spindle COMMAND [ARG...]`: runs a command of Spindle's kernel shell
   (help, mem, threads, uptime, ext, events, domains, run, halt) from a
   Linux program, through the application-specific system call
   0x53500002. Exits 0, or 1 (the kernel says why) for an unknown
   command, 2 for a line too long. */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPINDLE_SHELL 0x53500002L

int main(int argc, char **argv) {
    char line[1024];
    size_t used = 0;
    line[0] = 0;
    for (int i = 1; i < argc; i++) {
        size_t length = strlen(argv[i]);
        if (used + length + 1 >= sizeof line) {
            fprintf(stderr, "spindle: command line too long\n");
            return 2;
        }
        if (i > 1) line[used++] = ' ';
        memcpy(line + used, argv[i], length);
        used += length;
        line[used] = 0;
    }
    if (argc < 2) {
        memcpy(line, "help", 5);
        used = 4;
    }
    return syscall(SPINDLE_SHELL, line, used) == 0 ? 0 : 1;
}
