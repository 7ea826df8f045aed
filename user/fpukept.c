/* A user program for the tests: its getuid is answered by a Wasm module
   that computes in floating point (/ext/float-getuid.wasm, installed as
   the program's own short-circuit), and the program keeps values in
   xmm0-xmm2 and rounds upward (MXCSR) across 200 such calls. The kernel
   must keep both: the registers as they were, and the module's
   arithmetic rounded to nearest as Wasm requires (answer 1000; 1001 if
   it rounded as the program does). Prints "fpukept: ok" and exits 0, or
   says what was wrong and exits 1. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHORT_CIRCUIT 0x53500003L
#define MODULE "/ext/float-getuid.wasm"
/* Round toward +infinity (RC = 10), every exception masked. */
#define MXCSR_UP 0x5f80u

int main(void) {
    if (syscall(SHORT_CIRCUIT, MODULE, (long)SYS_getuid) != 0) {
        printf("fpukept: FAILED: installing the short-circuit of getuid\n");
        return 1;
    }
    uint64_t pattern[6], seen[6];
    for (int i = 0; i < 6; i++) pattern[i] = 0x0123456789abcdefull * (uint64_t)(i + 3);
    uint32_t mxcsr_up = MXCSR_UP, mxcsr_seen = 0, mxcsr_before = 0;
    long uid = 0, kept = 0;
    __asm__ volatile(
        "stmxcsr (%[before])\n"
        "ldmxcsr (%[up])\n"
        "movdqu 0(%[pattern]), %%xmm0\n"
        "movdqu 16(%[pattern]), %%xmm1\n"
        "movdqu 32(%[pattern]), %%xmm2\n"
        "movl $200, %%r12d\n"
        "1:\n"
        "movl $102, %%eax\n" /* getuid */
        "syscall\n"
        "movq %%rax, %[uid]\n"
        "cmpq $1000, %%rax\n"
        "jne 2f\n"
        "movdqu %%xmm0, 0(%[seen])\n"
        "movdqu %%xmm1, 16(%[seen])\n"
        "movdqu %%xmm2, 32(%[seen])\n"
        "movl $6, %%ecx\n"
        "3:\n"
        "movq -8(%[seen],%%rcx,8), %%rax\n"
        "cmpq -8(%[pattern],%%rcx,8), %%rax\n"
        "jne 2f\n"
        "decl %%ecx\n"
        "jnz 3b\n"
        "stmxcsr (%[mxseen])\n"
        "cmpl $0x5f80, (%[mxseen])\n"
        "jne 2f\n"
        "decl %%r12d\n"
        "jnz 1b\n"
        "movq $1, %[kept]\n"
        "2:\n"
        "stmxcsr (%[mxseen])\n"
        "ldmxcsr (%[before])\n"
        : [uid] "+m"(uid), [kept] "+m"(kept)
        : [pattern] "r"(pattern), [seen] "r"(seen), [up] "r"(&mxcsr_up),
          [mxseen] "r"(&mxcsr_seen), [before] "r"(&mxcsr_before)
        : "rax", "rcx", "r11", "r12", "xmm0", "xmm1", "xmm2", "memory", "cc");
    if (kept) {
        printf("fpukept: ok\n");
        return 0;
    }
    if (uid != 1000) {
        printf("fpukept: FAILED: getuid answered %ld (1001: the module rounded as the program does)\n", uid);
    } else {
        printf("fpukept: FAILED: the program's registers changed across getuid (mxcsr %#x)\n",
               mxcsr_seen);
    }
    return 1;
}
