/*
 * disk_probe.c -- which phase the disk is in (docs/benchmarks/README.md: this machine's disk
 * alternates between a fast phase, about 0.1 ms per sync, and a slow one, about 4 ms): 50
 * pwrites of 4 KiB each followed by fdatasync on a scratch file, the median and the 10th and
 * 90th percentiles printed in ms. Run before and after each benchmark run (bench_abba.sh).
 *
 *   cc -O2 -o disk_probe Benchmarks/commit/disk_probe.c
 *   ./disk_probe [FILE]          (FILE defaults to /tmp/disk-probe.bin; removed at the end)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SYNCS 50

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/disk-probe.bin";
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char b[4096] = {1};
    double t[SYNCS];
    if (fd < 0) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < 64; i++)
        if (pwrite(fd, b, sizeof b, (off_t)i * 4096) != (ssize_t)sizeof b) goto fail;
    if (fdatasync(fd) != 0) goto fail;
    for (int i = 0; i < SYNCS; i++) {
        double a = now();
        if (pwrite(fd, b, sizeof b, (off_t)(i % 64) * 4096) != (ssize_t)sizeof b || fdatasync(fd) != 0) goto fail;
        t[i] = now() - a;
    }
    qsort(t, SYNCS, sizeof *t, by_value);
    printf("probe: median %.3f ms, p10 %.3f, p90 %.3f\n", t[SYNCS / 2] * 1e3, t[SYNCS / 10] * 1e3, t[SYNCS * 9 / 10] * 1e3);
    close(fd);
    unlink(path);
    return 0;
fail:
    perror(path);
    close(fd);
    unlink(path);
    return 1;
}
