/* A user program for the tests: writes through a null pointer, which must
   end this program alone. */
#include <stdio.h>

int main(void) {
    volatile int *nothing = 0;
    printf("segv: about to write through a null pointer\n");
    *nothing = 1;
    printf("segv: still here, which is wrong\n");
    return 0;
}
