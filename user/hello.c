/* A user program for the tests: prints its arguments with printf (musl's
   stdio: writev) and exits with status 3. */
#include <stdio.h>

int main(int argc, char **argv) {
    printf("hello from %s, a musl program in ring 3, with %d arguments:", argv[0], argc);
    for (int i = 1; i < argc; i++) {
        printf(" %s", argv[i]);
    }
    printf("\n");
    return 3;
}
