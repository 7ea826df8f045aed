/* vm_extension - Appel & Li's virtual-memory primitives (SPIN's table 4) on
 * Spindle, with the fault handler a kernel extension instead of a SIGSEGV
 * handler: the program configures the kernel's Appel-Li extension
 * (kernel/src/appel_li.rs) with an application-specific system call, and
 * the extension handles its protection faults on
 * Translation.ProtectionFault. Each benchmark has the definition, the sizes
 * and the timing of the Linux baseline's vm.c (../shared/baseline/bench/),
 * whose figures it is put beside:
 *
 *  vm_trap       latency from just before a store to a protected page to the
 *                handler's entry (the extension reads the clock first),
 *                less the cost of reading the clock; the page is protected
 *                again outside the measurement.
 *  vm_fault      store to a protected page; the extension unprotects it;
 *                the store completes.
 *  vm_prot1, vm_prot100, vm_unprot100   mprotect of 1 or 100 pages.
 *  vm_appel1     one writable page of 100; store to another; the extension
 *                protects the writable one and unprotects the faulting one.
 *  vm_appel2     protect 100 pages in one call, store to each in random
 *                order; the extension unprotects each (per page).
 *  vm_dirty      mincore() of one resident page.
 *
 * Every fault-taking benchmark checks the number of faults the extension
 * handled, read back from the kernel. */
#include "common.h"
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PAGE 4096
#define PROTECTED PROT_READ
#define UNPROTECTED (PROT_READ | PROT_WRITE)

/* The extension's system call and its actions (kernel/src/appel_li.rs). */
#define VM_HANDLER 0x53500001L
enum { REMOVE = 0, UNPROTECT = 1, SWAP = 2, STAMP_AND_UNPROTECT = 3,
       QUERY_FAULTS = 100, QUERY_ENTRY_NS = 101 };

static long vm_handler(long action, char *start, char *end, char *page)
{
    return syscall(VM_HANDLER, action, start, end, page);
}

static void configure(long action, char *start, size_t pages, char *page)
{
    if (vm_handler(action, start, start + pages * PAGE, page) != 0)
        die("vm_handler");
}

static uint64_t faults_handled(void)
{
    long faults = vm_handler(QUERY_FAULTS, 0, 0, 0);
    if (faults < 0)
        die("vm_handler(QUERY_FAULTS)");
    return (uint64_t)faults;
}

static void expect_faults(uint64_t before, uint64_t expected)
{
    uint64_t seen = faults_handled() - before;
    if (seen != expected) {
        fprintf(stderr, "error: %s: expected %llu faults handled, saw %llu\n", bench_program,
                (unsigned long long)expected, (unsigned long long)seen);
        exit(1);
    }
}

static void store_byte(char *p) { *(volatile char *)p = 1; }

static char *map_region(size_t pages)
{
    char *region = mmap(NULL, pages * PAGE, UNPROTECTED, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        die("mmap");
    for (size_t i = 0; i < pages; i++)
        region[i * PAGE] = 1;
    return region;
}

static void unmap_region(char *region, size_t pages)
{
    if (vm_handler(REMOVE, 0, 0, 0) != 0)
        die("vm_handler(REMOVE)");
    if (munmap(region, pages * PAGE) != 0)
        die("munmap");
}

static void protect(char *start, size_t pages, int protection)
{
    if (mprotect(start, pages * PAGE, protection) != 0)
        die("mprotect");
}

static uint64_t random_next(uint64_t *state) /* xorshift64* */
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

/* ---- vm_trap ---- */
static uint64_t run_trap(uint64_t n, void *arg)
{
    char *page = arg;
    uint64_t latency = 0, clock_cost = 0, before_faults = faults_handled();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = now_ns();
        store_byte(page);
        long entry = vm_handler(QUERY_ENTRY_NS, 0, 0, 0);
        if (entry < 0 || (uint64_t)entry < before)
            fail("the handler's entry time is missing");
        latency += (uint64_t)entry - before;
        protect(page, 1, PROTECTED);
    }
    expect_faults(before_faults, n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = now_ns();
        clock_cost += now_ns() - before;
    }
    return latency > clock_cost ? latency - clock_cost : 0;
}

static void bench_trap(void)
{
    char *page = map_region(1);
    protect(page, 1, PROTECTED);
    configure(STAMP_AND_UNPROTECT, page, 1, 0);
    bench_run("vm_trap", run_trap, page);
    unmap_region(page, 1);
}

/* ---- vm_fault ---- */
#define FAULT_PAGES 256

static uint64_t run_fault(uint64_t n, void *arg)
{
    char *region = arg;
    uint64_t total = 0;
    for (uint64_t done = 0; done < n; done += FAULT_PAGES) {
        protect(region, FAULT_PAGES, PROTECTED);
        uint64_t before_faults = faults_handled();
        uint64_t start = now_ns();
        for (int i = 0; i < FAULT_PAGES; i++)
            store_byte(region + i * PAGE);
        total += now_ns() - start;
        expect_faults(before_faults, FAULT_PAGES);
    }
    return total;
}

static void bench_fault(void)
{
    char *region = map_region(FAULT_PAGES);
    configure(UNPROTECT, region, FAULT_PAGES, 0);
    bench_run_batched("vm_fault", run_fault, region, FAULT_PAGES);
    unmap_region(region, FAULT_PAGES);
}

/* ---- vm_prot1, vm_prot100, vm_unprot100 ---- */
#define PROTECT_CALLS 64

struct protect_test {
    char *region;
    size_t pages_per_call;
    int from, to;
};

static uint64_t run_protect(uint64_t n, void *arg)
{
    struct protect_test *test = arg;
    size_t chunk = test->pages_per_call * PAGE;
    uint64_t total = 0;
    for (uint64_t done = 0; done < n; done += PROTECT_CALLS) {
        uint64_t start = now_ns();
        for (int i = 0; i < PROTECT_CALLS; i++)
            if (mprotect(test->region + i * chunk, chunk, test->to) != 0)
                die("mprotect");
        total += now_ns() - start;
        protect(test->region, PROTECT_CALLS * test->pages_per_call, test->from);
    }
    return total;
}

static void bench_protect(const char *name, size_t pages_per_call, int from, int to)
{
    size_t pages = PROTECT_CALLS * pages_per_call;
    struct protect_test test = {map_region(pages), pages_per_call, from, to};
    protect(test.region, pages, from);
    bench_run_batched(name, run_protect, &test, PROTECT_CALLS);
    if (munmap(test.region, pages * PAGE) != 0)
        die("munmap");
}

/* ---- vm_appel1 ---- */
#define APPEL_PAGES 100

static uint64_t run_appel1(uint64_t n, void *arg)
{
    char *region = arg;
    static size_t current;
    uint64_t state = 0x9e3779b97f4a7c15ull, before_faults = faults_handled();
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        current = (current + 1 + random_next(&state) % (APPEL_PAGES - 1)) % APPEL_PAGES;
        store_byte(region + current * PAGE);
    }
    uint64_t elapsed = now_ns() - start;
    expect_faults(before_faults, n);
    return elapsed;
}

static void bench_appel1(void)
{
    char *region = map_region(APPEL_PAGES);
    protect(region + PAGE, APPEL_PAGES - 1, PROTECTED);
    configure(SWAP, region, APPEL_PAGES, region);
    bench_run("vm_appel1", run_appel1, region);
    unmap_region(region, APPEL_PAGES);
}

/* ---- vm_appel2 ---- */
static int appel2_order[APPEL_PAGES];

static uint64_t run_appel2(uint64_t n, void *arg)
{
    char *region = arg;
    uint64_t total = 0;
    for (uint64_t done = 0; done < n; done += APPEL_PAGES) {
        uint64_t before_faults = faults_handled();
        uint64_t start = now_ns();
        protect(region, APPEL_PAGES, PROTECTED);
        for (int i = 0; i < APPEL_PAGES; i++)
            store_byte(region + appel2_order[i] * PAGE);
        total += now_ns() - start;
        expect_faults(before_faults, APPEL_PAGES);
    }
    return total;
}

static void bench_appel2(void)
{
    uint64_t state = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < APPEL_PAGES; i++)
        appel2_order[i] = i;
    for (int i = APPEL_PAGES - 1; i > 0; i--) {
        int j = (int)(random_next(&state) % (uint64_t)(i + 1));
        int swap = appel2_order[i];
        appel2_order[i] = appel2_order[j];
        appel2_order[j] = swap;
    }
    char *region = map_region(APPEL_PAGES);
    configure(UNPROTECT, region, APPEL_PAGES, 0);
    bench_run_batched("vm_appel2", run_appel2, region, APPEL_PAGES);
    unmap_region(region, APPEL_PAGES);
}

/* ---- vm_dirty ---- */
static uint64_t run_dirty(uint64_t n, void *arg)
{
    char *page = arg;
    unsigned char state;
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (mincore(page, PAGE, &state) != 0 || !(state & 1))
            die("mincore");
    return now_ns() - start;
}

static void bench_dirty(void)
{
    char *page = map_region(1);
    bench_run("vm_dirty", run_dirty, page);
    if (munmap(page, PAGE) != 0)
        die("munmap");
}

int main(void)
{
    bench_program = "vm_extension";
    bench_trap();
    bench_fault();
    bench_protect("vm_prot1", 1, UNPROTECTED, PROTECTED);
    bench_protect("vm_prot100", 100, UNPROTECTED, PROTECTED);
    bench_protect("vm_unprot100", 100, PROTECTED, UNPROTECTED);
    bench_appel1();
    bench_appel2();
    bench_dirty();
    return 0;
}
