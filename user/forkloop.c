/* A user program for the tests: forks N children (argv[1], default 100)
   one after another, each exiting at once with a status the parent
   checks. The kernel's leak test counts frames and heap around it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 100;
    for (int i = 0; i < cycles; i++) {
        pid_t child = fork();
        if (child == 0) _exit(i & 0x7f);
        int status = 0;
        if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)
            || WEXITSTATUS(status) != (i & 0x7f)) {
            printf("forkloop: cycle %d went wrong\n", i);
            return 1;
        }
    }
    printf("forkloop: %d cycles\n", cycles);
    return 0;
}
