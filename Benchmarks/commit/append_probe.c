/*
 * append_probe.c -- what a durable commit's append and sync cost on this disk, apart from the
 * commit (docs/benchmarks/README.md, "The durable commit beyond its sync"):
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -o /tmp/append-probe Benchmarks/commit/append_probe.c
 *   append-probe records FILE [BLOCKS]
 *       appends followed by fdatasync into a file of written zeros, three kinds
 *       alternated in blocks of 50 (BLOCKS blocks of each, default 10): 4,024-byte records back
 *       to back (most span two 4 KiB blocks, as a one-row commit's journal records do), 4,096-byte
 *       records at 4 KiB boundaries, and 4,120-byte records back to back (SQLite's WAL frame,
 *       24 + 4,096 bytes); prints each kind's median, p10 and p90 in µs;
 *   append-probe dsync FILE [BLOCKS]
 *       4,024-byte appends into written zeros, pwrite + fdatasync against one
 *       pwritev2(RWF_DSYNC), alternated in blocks of 50;
 *   append-probe direct FILE [BLOCKS]
 *       records as the journal writes them since issue 16's direct I/O (docs/benchmarks/README.md,
 *       "The journal's size ahead of need, and records by direct I/O"): 4,312-byte records back
 *       to back with pwrite + fdatasync (the bench's mean record, as written before), against
 *       4,608-byte records (4,312 padded to a multiple of 512) back to back from a 512-byte
 *       boundary, written through a descriptor opened with O_DIRECT, then fdatasync; alternated
 *       in blocks of 50, each kind in a region of written zeros of its own; and the same
 *       records padded to 8,192 bytes at 4 KiB boundaries (a padding to 4 KiB, not made: a
 *       device that emulates 512-byte sectors over 4 KiB ones rewrites whole 4 KiB blocks);
 *   append-probe grow FILE
 *       five growths of a 1 MiB file by 4 MiB as the journal grows (posix_fallocate, zeros in
 *       64 KiB pwrites, fdatasync), each step's time.
 *
 * FILE is created (truncated) and removed at the end. Run it between the commit loops, with the
 * disk probe (disk_probe.c) before and after: the figures mean something only in one phase.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char zeros[65536];

/* Writes `len` bytes of zeros from `off` in 64 KiB pwrites. */
static int zero_fill(int fd, long off, long len)
{
    for (long o = off; o < off + len; o += (long)sizeof zeros)
        if (pwrite(fd, zeros, sizeof zeros, o) != (ssize_t)sizeof zeros) return -1;
    return 0;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    printf("%-52s median %.1f us, p10 %.1f, p90 %.1f\n", what, v[n / 2] * 1e6, v[n / 10] * 1e6, v[n * 9 / 10] * 1e6);
}

static int records(int fd, int blocks)
{
    static char buf[8192];
    memset(buf, 7, sizeof buf);
    const long lens[3] = {4024, 4096, 4120};
    /* each kind appends into a region of its own, all of them written zeros, so that no sync
     * carries a size change or an allocation */
    long region = ((50l * blocks * 4120 + 8192) + 4095) & ~4095l;
    long off[3] = {4096 + 8, region + 4096, 2 * region + 4096};
    const char *names[3] = {"4,024-byte records back to back", "4,096-byte records at 4 KiB boundaries",
                            "4,120-byte records back to back (a WAL frame)"};
    double *t[3];
    int n[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++)
        if (!(t[m] = malloc(50 * (size_t)blocks * sizeof(double)))) return 1;
    if (zero_fill(fd, 0, 3 * region + 8192) || fdatasync(fd)) return 1;
    for (int k = 0; k < 3 * blocks; k++) {
        int m = k % 3;
        for (int i = 0; i < 50; i++) {
            double a = now();
            if (pwrite(fd, buf, (size_t)lens[m], off[m]) != lens[m] || fdatasync(fd)) return 1;
            t[m][n[m]++] = now() - a;
            off[m] += lens[m];
        }
    }
    for (int m = 0; m < 3; m++) report(names[m], t[m], n[m]);
    return 0;
}

static int dsync(int fd, int blocks)
{
    static char buf[4024];
    memset(buf, 7, sizeof buf);
    double *a = malloc(50 * (size_t)blocks * sizeof(double)), *b = malloc(50 * (size_t)blocks * sizeof(double));
    int na = 0, nb = 0;
    long off = 4096;
    if (!a || !b || zero_fill(fd, 0, 100l * blocks * (long)sizeof buf + 8192) || fdatasync(fd)) return 1;
    for (int k = 0; k < 2 * blocks; k++)
        for (int i = 0; i < 50; i++, off += (long)sizeof buf) {
            double t0 = now();
            if (k & 1) {
                struct iovec v = {buf, sizeof buf};
                if (pwritev2(fd, &v, 1, off, RWF_DSYNC) != (ssize_t)sizeof buf) return 1;
                b[nb++] = now() - t0;
            } else {
                if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf || fdatasync(fd)) return 1;
                a[na++] = now() - t0;
            }
        }
    report("pwrite + fdatasync", a, na);
    report("pwritev2(RWF_DSYNC)", b, nb);
    return 0;
}

static int direct(const char *path, int fd, int blocks)
{
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, 8192)) return 1;
    char *buf = mem;
    memset(buf, 7, 8192);
    long region = ((50l * blocks * 8192 + 8192) + 4095) & ~4095l;
    long off[3] = {4096, region + 4096, 2 * region + 4096};
    double *t[3];
    int n[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++)
        if (!(t[m] = malloc(50 * (size_t)blocks * sizeof(double)))) return 1;
    if (zero_fill(fd, 0, 3 * region + 8192) || fdatasync(fd)) return 1;
    int dfd = open(path, O_RDWR | O_DIRECT);
    if (dfd < 0) return 1;
    for (int k = 0; k < 3 * blocks; k++) {
        int m = k % 3;
        for (int i = 0; i < 50; i++) {
            double a = now();
            if (m == 0) {
                if (pwrite(fd, buf, 4312, off[0]) != 4312 || fdatasync(fd)) return 1;
                off[0] += 4312;
            } else if (m == 1) {
                if (pwrite(dfd, buf, 4608, off[1]) != 4608 || fdatasync(dfd)) return 1;
                off[1] += 4608;
            } else {
                if (pwrite(dfd, buf, 8192, off[2]) != 8192 || fdatasync(dfd)) return 1;
                off[2] += 8192;
            }
            t[m][n[m]++] = now() - a;
        }
    }
    close(dfd);
    report("4,312-byte records, pwrite + fdatasync", t[0], n[0]);
    report("the same padded to 4,608, O_DIRECT pwrite + fdatasync", t[1], n[1]);
    report("the same padded to 8,192, O_DIRECT pwrite + fdatasync", t[2], n[2]);
    return 0;
}

static int grow(int fd)
{
    long size = 1l << 20;
    if (posix_fallocate(fd, 0, size) || zero_fill(fd, 0, size) || fdatasync(fd)) return 1;
    for (int g = 0; g < 5; g++) {
        long add = 4l << 20;
        double t0 = now();
        if (posix_fallocate(fd, size, add)) return 1;
        double t1 = now();
        if (zero_fill(fd, size, add)) return 1;
        double t2 = now();
        if (fdatasync(fd)) return 1;
        double t3 = now();
        printf("growth %d (4 MiB): posix_fallocate %.0f us, zeros %.0f us, fdatasync %.0f us\n", g, (t1 - t0) * 1e6,
               (t2 - t1) * 1e6, (t3 - t2) * 1e6);
        size += add;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: append-probe records|dsync|direct|grow FILE [BLOCKS]\n");
        return 2;
    }
    int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[2]);
        return 1;
    }
    int blocks = argc > 3 ? atoi(argv[3]) : 10, rc;
    if (blocks < 1) blocks = 1;
    if (!strcmp(argv[1], "records")) rc = records(fd, blocks);
    else if (!strcmp(argv[1], "dsync")) rc = dsync(fd, blocks);
    else if (!strcmp(argv[1], "direct")) rc = direct(argv[2], fd, blocks);
    else rc = grow(fd);
    if (rc) perror("append-probe");
    close(fd);
    unlink(argv[2]);
    return rc;
}
