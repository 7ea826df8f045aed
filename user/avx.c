/* A user program for the tests: keeps a 256-bit pattern (seeded by
   argv[1]) in ymm0 across 2,000 sched_yield calls while another copy does
   the same with its own pattern, and checks all 32 bytes after each. The
   upper 128 bits are AVX state, which only XSAVE keeps across a context
   switch. Exits 0 if the pattern held, 1 if it changed, 2 if the CPU or
   the kernel does not offer AVX. */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int avx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & bit_AVX) || !(c & bit_OSXSAVE)) return 0;
    uint32_t low, high;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (low & 6) == 6; /* SSE and AVX state enabled by the kernel */
}

int main(int argc, char **argv) {
    if (!avx_usable()) {
        printf("avx: AVX is not available to user programs\n");
        return 2;
    }
    uint64_t seed = argc > 1 ? strtoull(argv[1], 0, 0) : 1;
    uint64_t pattern[4], seen[4];
    for (int i = 0; i < 4; i++) pattern[i] = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0x1111111111111111ull;
    long changed;
    __asm__ volatile(
        "vmovdqu (%[pattern]), %%ymm0\n"
        "movl $2000, %%r12d\n"
        "1:\n"
        "movl $24, %%eax\n" /* sched_yield */
        "syscall\n"
        "vmovdqu %%ymm0, (%[seen])\n"
        "movq (%[seen]), %%rax\n    cmpq (%[pattern]), %%rax\n    jne 2f\n"
        "movq 8(%[seen]), %%rax\n   cmpq 8(%[pattern]), %%rax\n   jne 2f\n"
        "movq 16(%[seen]), %%rax\n  cmpq 16(%[pattern]), %%rax\n  jne 2f\n"
        "movq 24(%[seen]), %%rax\n  cmpq 24(%[pattern]), %%rax\n  jne 2f\n"
        "decl %%r12d\n"
        "jnz 1b\n"
        "xorl %%eax, %%eax\n"
        "jmp 3f\n"
        "2: movl $1, %%eax\n"
        "3: vzeroupper\n"
        : "=&a"(changed)
        : [pattern] "r"(pattern), [seen] "r"(seen)
        : "rcx", "r11", "r12", "xmm0", "memory", "cc");
    if (changed) {
        printf("avx: ymm0 changed across a context switch\n");
        return 1;
    }
    return 0;
}
