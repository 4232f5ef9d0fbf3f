/*
 * chase.c -- the memory latency behind the lookup figures (docs/benchmarks/README.md,
 * "scale.pk.get to 100M"): a pointer chase over one random cycle through
 * every 64-byte line of an anonymous region, so each load waits for the one before it, as a
 * tree descent's reads do. Prints the CPU time per load (on a loaded machine the wall time also
 * counts other processes' turns).
 *
 *   gcc -O2 -o chase Benchmarks/lookup/chase.c
 *   ./chase MIB HUGE     MIB: the region's size; HUGE 1 asks for 2 MiB pages (MADV_HUGEPAGE),
 *                        0 forbids them (MADV_NOHUGEPAGE); prints the AnonHugePages it got
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64: a fixed pseudo-random sequence, the same cycle on every run */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: chase MIB HUGE\n");
        return 2;
    }
    size_t mib = (size_t)atol(argv[1]);
    int huge = atoi(argv[2]);
    const size_t align = (size_t)2 << 20;
    size_t size = mib << 20, lines = size / 64;
    if (lines < 2) return 2;
    char *raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) perror("madvise");
    memset(p, 0, size);
    uint32_t *order = malloc(lines * sizeof *order);
    if (!order) return 1;
    for (size_t i = 0; i < lines; i++) order[i] = (uint32_t)i;
    uint64_t seed = 88172645463325252ull;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(next_random(&seed) % (i + 1));
        uint32_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (size_t i = 0; i < lines; i++) *(char **)(p + (size_t)order[i] * 64) = p + (size_t)order[(i + 1) % lines] * 64;
    free(order);
    const long loads = 5000000;
    char *q = p;
    double c0 = cpu_now();
    for (long i = 0; i < loads; i++) q = *(char **)q;
    double c1 = cpu_now();
    long anon_huge = 0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages:", 14)) anon_huge = atol(line + 14);
    if (f) fclose(f);
    printf("%zu MiB, huge %d: %.1f ns of CPU per dependent load (AnonHugePages %ld kB; end %p)\n", mib, huge,
           (c1 - c0) * 1e9 / (double)loads, anon_huge, (void *)q);
    return 0;
}
