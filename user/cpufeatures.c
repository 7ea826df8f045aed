/* A user program for the tests: every instruction family that CPUID
   advertises, and the kernel enables, runs without SIGILL (issue 27:
   stress-ng's matrix stressor died of SIGILL on a VEX-encoded SSE4.1
   instruction, under a CPU model that offered AVX but not SSE4.1, which
   no real processor does and every compiler assumes). For each family it
   runs one instruction of it under a SIGILL handler and prints
   `cpufeatures: NAME ok`, `NAME absent` (not advertised, or its state not
   enabled in XCR0), or `NAME SIGILL`. Exits 0 when none died, 1 when one
   did, and 2 when AVX is advertised by a processor that lacks SSE4.2 or
   POPCNT and the kernel enabled its state anyway. */
#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf escape;
static int sigills;

static void on_sigill(int signal) {
    (void)signal;
    siglongjmp(escape, 1);
}

static void sse3(void) { __asm__ volatile("haddps %%xmm1, %%xmm0" ::: "xmm0", "xmm1"); }
static void ssse3(void) { __asm__ volatile("pshufb %%xmm1, %%xmm0" ::: "xmm0", "xmm1"); }
static void sse41(void) { __asm__ volatile("pcmpeqq %%xmm1, %%xmm0" ::: "xmm0", "xmm1"); }
static void sse42(void) {
    uint32_t crc = 0;
    __asm__ volatile("crc32b %1, %0" : "+r"(crc) : "r"((uint8_t)7));
}
static void popcnt(void) {
    uint64_t bits = 0xf0f0, count;
    __asm__ volatile("popcnt %1, %0" : "=r"(count) : "r"(bits));
}
/* AVX: a 256-bit operation and the VEX form of an SSE4.1 one. */
static void avx256(void) { __asm__ volatile("vaddps %%ymm1, %%ymm0, %%ymm0" ::: "xmm0", "xmm1"); }
static void avx_vex_sse41(void) {
    __asm__ volatile("vpcmpeqq %%xmm3, %%xmm0, %%xmm1" ::: "xmm0", "xmm1", "xmm3");
}

static void try(const char *name, int advertised, void (*run)(void)) {
    if (!advertised) {
        printf("cpufeatures: %s absent\n", name);
        return;
    }
    if (sigsetjmp(escape, 1) == 0) {
        run();
        printf("cpufeatures: %s ok\n", name);
    } else {
        printf("cpufeatures: %s SIGILL\n", name);
        sigills++;
    }
}

int main(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        printf("cpufeatures: no CPUID leaf 1\n");
        return 1;
    }
    int avx_state = 0;
    if ((c & bit_OSXSAVE) != 0) {
        uint32_t low, high;
        __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
        avx_state = (low & 6) == 6;
    }
    int avx = (c & bit_AVX) != 0 && avx_state;
    signal(SIGILL, on_sigill);
    try("sse3", (c & bit_SSE3) != 0, sse3);
    try("ssse3", (c & bit_SSSE3) != 0, ssse3);
    try("sse4.1", (c & bit_SSE4_1) != 0, sse41);
    try("sse4.2", (c & bit_SSE4_2) != 0, sse42);
    try("popcnt", (c & bit_POPCNT) != 0, popcnt);
    try("avx", avx, avx256);
    try("avx-vex-sse4.1", avx, avx_vex_sse41);
    if (avx && ((c & bit_SSE4_2) == 0 || (c & bit_POPCNT) == 0)) {
        printf("cpufeatures: AVX state is enabled on a processor without SSE4.2 or POPCNT\n");
        return 2;
    }
    printf("cpufeatures: %d SIGILL\n", sigills);
    return sigills ? 1 : 0;
}
