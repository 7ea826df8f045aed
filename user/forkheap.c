/* A user program for the tests: the sequence that froze the kernel under
   stress-ng. A process with a large resident address space (argv[1] MiB,
   default 96, as a dynamically linked program with its libraries mapped
   has) forks several children that live at the same time; every page it
   touched is then shared copy-on-write, so the kernel counts many shared
   frames at once. The frame allocator once kept those counts in a map on
   the kernel heap, under its own lock; the heap grows by taking frames
   under that lock, so a fork that needed more heap waited for itself with
   interrupts off and the machine froze (docs/design/0003). The children
   write to their copy (copy on write) and exit with a status the parent
   checks; prints one line and exits 0 when all went as expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 4
#define ROUNDS 3

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 96;
    size_t bytes = (size_t)mib << 20;
    unsigned char *memory =
        mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        perror("forkheap: mmap");
        return 1;
    }
    for (size_t at = 0; at < bytes; at += 4096) memory[at] = (unsigned char)(at >> 12);
    for (int round = 0; round < ROUNDS; round++) {
        pid_t children[CHILDREN];
        for (int i = 0; i < CHILDREN; i++) {
            children[i] = fork();
            if (children[i] < 0) {
                perror("forkheap: fork");
                return 1;
            }
            if (children[i] == 0) {
                /* Reads see the parent's bytes; a write gets a copy. */
                size_t page = (size_t)(i * 977 + round * 131) % (bytes >> 12);
                if (memory[page << 12] != (unsigned char)page) _exit(100);
                memory[page << 12] ^= 0xff;
                _exit(10 + i);
            }
        }
        for (int i = 0; i < CHILDREN; i++) {
            int status = 0;
            if (waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status)
                || WEXITSTATUS(status) != 10 + i) {
                printf("forkheap: round %d child %d ended with status %#x\n", round, i, status);
                return 1;
            }
        }
    }
    for (size_t at = 0; at < bytes; at += 4096) {
        if (memory[at] != (unsigned char)(at >> 12)) {
            printf("forkheap: a child's write reached the parent at page %zu\n", at >> 12);
            return 1;
        }
    }
    printf("forkheap: %d forks of a %ld MiB process, every child as expected\n",
           CHILDREN * ROUNDS, mib);
    return 0;
}
