/* A user program for the tests: ends itself by the fault named in argv[1]
   (ud2, div0, stack), each of which must end this program alone. */
#include <stdio.h>
#include <string.h>

static volatile int zero;
/* Never false, but the compiler cannot know: the recursion has an exit. */
static volatile int deeper = 1;

/* Recurses with a 4 KiB frame the compiler cannot elide. */
static int descend(int depth) {
    volatile char frame[4096];
    frame[0] = (char)depth;
    if (!deeper) return frame[0];
    return descend(depth + 1) + frame[0];
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "";
    printf("faults: about to %s\n", how);
    if (strcmp(how, "ud2") == 0) __builtin_trap();
    if (strcmp(how, "div0") == 0) return 10 / zero;
    if (strcmp(how, "stack") == 0) return descend(0);
    printf("faults: no such fault\n");
    return 2;
}
