/*
 * journal_folios.c -- what a journal record's append costs by the size of the page-cache folios
 * it lands in (docs/benchmarks/README.md, "Large folios and the commit's writes").
 *
 *   cc -O2 -o journal_folios Benchmarks/commit/journal_folios.c
 *   ./journal_folios FILE PIECE_BYTES [dsync]
 *
 * Makes FILE 4 MiB (fallocate; an existing FILE is overwritten, and removed at the end), writes
 * its zeros in pwrites of PIECE_BYTES each (the page cache then holds it in folios of about that
 * size, on Linux with large folios) and syncs it, as a journal growth does. Then appends 500
 * records of 3,800 bytes at consecutive offsets from 4096, each followed by fdatasync (or, with
 * `dsync`, written by pwritev2 with RWF_DSYNC, the write and its sync in one call), and prints
 * the medians of the write, the sync and both, in µs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RECORDS 500

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
    if (argc < 3) {
        fprintf(stderr, "usage: journal_folios FILE PIECE_BYTES [dsync]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t piece = (size_t)atol(argv[2]), size = (size_t)4 << 20;
    int dsync = argc > 3 && !strcmp(argv[3], "dsync");
    if (piece == 0 || size % piece) return 2;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char *zeros = calloc(1, piece);
    if (fd < 0 || !zeros || fallocate(fd, 0, 0, (off_t)size) != 0) {
        perror(path);
        return 1;
    }
    for (size_t o = 0; o < size; o += piece)
        if (pwrite(fd, zeros, piece, (off_t)o) != (ssize_t)piece) goto fail;
    if (fdatasync(fd) != 0) goto fail;
    static char rec[3800];
    memset(rec, 7, sizeof rec);
    static double tw[RECORDS], ts[RECORDS], tt[RECORDS];
    for (int i = 0; i < RECORDS; i++) {
        off_t at = 4096 + (off_t)i * (off_t)sizeof rec;
        double a = now(), b, c;
        if (dsync) {
            struct iovec io = {rec, sizeof rec};
            if (pwritev2(fd, &io, 1, at, RWF_DSYNC) != (ssize_t)sizeof rec) goto fail;
            b = c = now();
        } else {
            if (pwrite(fd, rec, sizeof rec, at) != (ssize_t)sizeof rec) goto fail;
            b = now();
            if (fdatasync(fd) != 0) goto fail;
            c = now();
        }
        tw[i] = b - a;
        ts[i] = c - b;
        tt[i] = c - a;
    }
    qsort(tw, RECORDS, sizeof *tw, by_value);
    qsort(ts, RECORDS, sizeof *ts, by_value);
    qsort(tt, RECORDS, sizeof *tt, by_value);
    printf("pieces of %zu bytes%s: write %.2f us, sync %.2f us, both %.2f us (medians of %d; both p10 %.2f, p90 %.2f)\n",
           piece, dsync ? ", RWF_DSYNC" : "", tw[RECORDS / 2] * 1e6, ts[RECORDS / 2] * 1e6, tt[RECORDS / 2] * 1e6,
           RECORDS, tt[RECORDS / 10] * 1e6, tt[RECORDS * 9 / 10] * 1e6);
    free(zeros);
    close(fd);
    unlink(path);
    return 0;
fail:
    perror(path);
    close(fd);
    unlink(path);
    return 1;
}
