/*
 * commit_loop.c -- the C loop behind the commit figures in docs/benchmarks/README.md ("The small
 * commit's CPU and system calls"): the commit.durable and commit.nosync rows' own load.
 *
 *   commit-loop build FILE ROWS
 *       a file of ROWS objects of 10 Int columns i0..i9 (object r holds r in each), made by one
 *       cs_obj_create_many_int in one NOSYNC commit, as the bench's csBuildIntFile does;
 *   commit-loop run FILE full|nosync START COUNT [ROWS]
 *       commits u = START .. START + COUNT - 1 on that file (ROWS defaults to 1,000,000), each
 *       setting i0 of object (u mod ROWS) x 7919 mod ROWS to -(u + 1) in its own write
 *       transaction (begin, open, set, commit, end), then prints the time, CPU time and the I/O
 *       layer's writes, bytes and syncs per commit (cs_txn_last_commit_io, header included),
 *       and what the block device holding FILE wrote (/sys/dev/block/MAJ:MIN/stat, sectors
 *       written) during the commits and at the close (its checkpoint): exact only on a device
 *       nobody else writes, such as a loop-mounted file system of its own. With
 *       COMMIT_LOOP_PWRITE=1 in the environment the file is opened with the default I/O layer
 *       less its write_mapped, so every write is a pwrite (docs/ARCHITECTURE.md, Writes
 *       through a mapping): the two write paths side by side;
 *   commit-loop cache FILE huge|seq|small
 *       syncs FILE, drops its pages from the page cache and reads it back: through a
 *       MADV_HUGEPAGE mapping (huge: 2 MiB folios where the kernel gives them), with pread and
 *       readahead (seq: folios that grow with the readahead window), or a page at a time
 *       without readahead (small: 4 KiB folios); then prints what `folios` prints;
 *   commit-loop folios FILE
 *       how much of FILE is cached, and how much of it in 2 MiB folios (FilePmdMapped of a
 *       mapping at a 2 MiB boundary).
 *
 * Under valgrind --tool=callgrind --instr-atstart=no only the commits are counted (client
 * requests around the loop, when valgrind's headers are installed). Built with the core's
 * sources (`make commit-loop`), optimised, with -g.
 */
#include "cstore.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT
#endif

static void must(int rc, const char *what)
{
    if (rc == CS_OK) return;
    fprintf(stderr, "commit-loop: %s failed: %d (%s)\n", what, rc, cs_errmsg());
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

/* Sectors the block device holding `path` has written since boot (the seventh field of
 * /sys/dev/block/MAJ:MIN/stat, a partition's own count), or -1. The device is looked up once:
 * a stat of the file per commit would read its times, and on kernels with fine-grained
 * timestamps the next pwrite would then dirty its inode (docs/benchmarks/README.md, "fstat in
 * every write"), which its sync writes. */
static long device_sectors(const char *path)
{
    static char sp[128];
    long v[7] = {0};
    if (!sp[0]) {
        struct stat st;
        if (stat(path, &st) != 0) return -1;
        snprintf(sp, sizeof sp, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
    }
    FILE *f = fopen(sp, "r");
    if (!f) return -1;
    int n = fscanf(f, "%ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
    fclose(f);
    return n == 7 ? v[6] : -1;
}

/* Prints how much of FILE is cached and how much of that sits in 2 MiB folios: FILE is mapped
 * at a 2 MiB boundary, each cached page is read through the mapping, and the mapping's Rss and
 * FilePmdMapped are read from /proc/self/smaps (a 2 MiB folio of the page cache is mapped with
 * one 2 MiB entry). Folios between 4 KiB and 2 MiB do not show here. */
static int folios(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size, pages = (len + 4095) / 4096, huge = (size_t)2 << 20;
    unsigned char *area = mmap(NULL, len + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return 1;
    unsigned char *at = (unsigned char *)(((uintptr_t)area + huge - 1) & ~(uintptr_t)(huge - 1));
    unsigned char *p = mmap(at, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
    unsigned char *res = malloc(pages);
    if (p == MAP_FAILED || !res || mincore(p, len, res) != 0) {
        perror("folios");
        return 1;
    }
    size_t cached = 0;
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < pages; i++)
        if (res[i] & 1) sink += p[i * 4096], cached++;
    (void)sink;
    FILE *sf = fopen("/proc/self/smaps", "r");
    char line[512];
    long rss = -1, pmd = -1;
    bool in = false;
    while (sf && fgets(line, sizeof line, sf)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') > strchr(line, ' '))
            in = lo == (uintptr_t)p;
        if (in) {
            if (!strncmp(line, "Rss:", 4)) rss = atol(line + 4);
            if (!strncmp(line, "FilePmdMapped:", 14)) pmd = atol(line + 14);
        }
    }
    if (sf) fclose(sf);
    printf("%s: %zu of %zu KiB cached, mapped: %ld KiB, of it in 2 MiB folios: %ld KiB\n", path, cached * 4,
           pages * 4, rss, pmd);
    munmap(area, len + huge);
    free(res);
    close(fd);
    return 0;
}

/* Drops FILE's pages and reads them back so that the page cache holds folios of one kind (see
 * the usage above); fails when pages stay cached (another process maps the file). */
static int cache(const char *path, const char *how)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size, pages = (len + 4095) / 4096;
    if (fdatasync(fd) != 0) perror("fdatasync"); /* dirty pages are not dropped */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *res = malloc(pages);
    size_t left = 0;
    if (p == MAP_FAILED || !res || mincore(p, len, res) != 0) {
        perror("cache");
        return 1;
    }
    for (size_t i = 0; i < pages; i++) left += res[i] & 1;
    free(res);
    if (left) {
        fprintf(stderr, "%zu of %zu pages of %s are still cached\n", left, pages, path);
        return 1;
    }
    volatile unsigned char sink = 0;
    static unsigned char buf[1 << 16];
    if (!strcmp(how, "huge")) {
        if (madvise(p, len, MADV_HUGEPAGE) != 0) perror("madvise(MADV_HUGEPAGE)");
        for (size_t o = 0; o < len; o += 4096) sink += p[o];
    } else if (!strcmp(how, "seq")) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        for (off_t o = 0; pread(fd, buf, sizeof buf, o) > 0; o += (off_t)sizeof buf) sink += buf[0];
    } else {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        for (off_t o = 0; pread(fd, buf, 4096, o) > 0; o += 4096) sink += buf[0];
    }
    (void)sink;
    munmap(p, len);
    close(fd);
    return folios(path);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int build(const char *path, long rows)
{
    char aside[4096];
    remove(path);
    snprintf(aside, sizeof aside, "%s.lock", path);
    remove(aside);
    snprintf(aside, sizeof aside, "%s.journal", path);
    remove(aside);
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    cs_txn *t;
    uint32_t table, cols[10];
    must(cs_db_open(path, &o, &db), "cs_db_open");
    must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
    must(cs_table_add(t, "Item", 0, &table), "cs_table_add");
    for (int c = 0; c < 10; c++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", c);
        must(cs_column_add(t, table, name, CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &cols[c]), "cs_column_add");
    }
    int64_t *v = malloc((size_t)rows * sizeof *v);
    if (!v) return 1;
    for (long i = 0; i < rows; i++) v[i] = i;
    const int64_t *per[10];
    for (int c = 0; c < 10; c++) per[c] = v;
    int64_t first;
    must(cs_obj_create_many_int(t, table, (size_t)rows, 10, cols, per, &first), "cs_obj_create_many_int");
    must(cs_txn_commit(t), "cs_txn_commit");
    must(cs_txn_end(t), "cs_txn_end");
    must(cs_db_close(db), "cs_db_close");
    free(v);
    printf("built %ld objects in %s\n", rows, path);
    return 0;
}

static int run(const char *path, bool full, long start, long count, long rows)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = full ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC;
    static cs_io by_pwrite;
    const char *pw = getenv("COMMIT_LOOP_PWRITE");
    if (pw && !strcmp(pw, "1")) {
        by_pwrite = *cs_io_default();
        by_pwrite.write_mapped = NULL;
        o.io = &by_pwrite;
    }
    long d0 = device_sectors(path);
    /* COMMIT_LOOP_DEVICE=1: the device's count and the clock read after every commit, to tell
     * the commits that wrote much (checkpoints, the journal's growths) from the rest */
    const char *dv = getenv("COMMIT_LOOP_DEVICE");
    bool per_commit = dv && !strcmp(dv, "1") && d0 >= 0;
    long *dev = per_commit ? calloc((size_t)count, sizeof *dev) : NULL;
    double *at = per_commit ? calloc((size_t)count, sizeof *at) : NULL;
    if (!dev || !at) { /* no per-commit figures without both */
        free(dev);
        free(at);
        dev = NULL;
        at = NULL;
    }
    /* each commit's wall time, for the median (a loaded machine's stalls move the mean) */
    double *took = calloc((size_t)count, sizeof *took);
    if (!took) return 1;
    cs_db *db;
    cs_txn *t;
    uint32_t table, col;
    must(cs_db_open(path, &o, &db), "cs_db_open");
    must(cs_txn_begin(db, CS_TXN_READ, &t), "cs_txn_begin");
    must(cs_table_find(t, "Item", &table), "cs_table_find");
    must(cs_column_find(t, table, "i0", &col), "cs_column_find");
    cs_iter it;
    cs_obj ob;
    must(cs_iter_init(&it, t, table), "cs_iter_init");
    must(cs_iter_next(&it, &ob), "cs_iter_next");
    int64_t first = ob.key; /* the objects' keys are first, first + 1, ... */
    must(cs_txn_end(t), "cs_txn_end");
    uint64_t writes = 0, syncs = 0, bytes = 0;
    double c0 = cpu(), t0 = now();
    CALLGRIND_START_INSTRUMENTATION;
    /* the driver's own bookkeeping (clock and device reads) is left out of callgrind's counts;
     * with COMMIT_LOOP_DEVICE=1 the mean per commit includes the device's reads, the median
     * does not */
    for (long u = start; u < start + count; u++) {
        CALLGRIND_TOGGLE_COLLECT;
        double b0 = now();
        CALLGRIND_TOGGLE_COLLECT;
        must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
        must(cs_obj_open(t, table, first + (int64_t)((uint64_t)(u % rows) * 7919 % (uint64_t)rows), &ob), "cs_obj_open");
        must(cs_obj_set_int(&ob, col, -(int64_t)(u + 1)), "cs_obj_set_int");
        must(cs_txn_commit(t), "cs_txn_commit");
        uint64_t w, s;
        cs_txn_last_commit_io(t, &w, &s);
        writes += w;
        syncs += s;
        bytes += cs_txn_last_commit_bytes(t);
        must(cs_txn_end(t), "cs_txn_end");
        CALLGRIND_TOGGLE_COLLECT;
        took[u - start] = now() - b0;
        if (dev) dev[u - start] = device_sectors(path), at[u - start] = now();
        CALLGRIND_TOGGLE_COLLECT;
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    double t1 = now(), c1 = cpu(), n = (double)count;
    long d1 = device_sectors(path);
    qsort(took, (size_t)count, sizeof *took, by_value);
    printf("%ld commits%s: %.2f us, %.2f us of CPU, %.2f writes, %.0f bytes, %.3f syncs per commit; median %.2f us, "
           "p90 %.2f us\n",
           count, o.io ? " (pwrite only)" : "", (t1 - t0) * 1e6 / n, (c1 - c0) * 1e6 / n, (double)writes / n,
           (double)bytes / n, (double)syncs / n, took[count / 2] * 1e6, took[count * 9 / 10] * 1e6);
    free(took);
    must(cs_db_close(db), "cs_db_close");
    long d2 = device_sectors(path);
    if (dev) {
        /* sectors per commit: those over 256 KiB listed with their time, the rest summed */
        long prev = d0, small = 0, nsmall = 0;
        for (long i = 0; i < count; i++) {
            long d = dev[i] - prev;
            prev = dev[i];
            if (d > 512)
                printf("commit %ld: the device wrote %ld KiB, %.2f ms\n", start + i, d / 2,
                       (at[i] - (i ? at[i - 1] : t0)) * 1e3);
            else small += d, nsmall++;
        }
        if (nsmall) printf("the other %ld commits: %.2f KiB each\n", nsmall, (double)small / 2 / (double)nsmall);
        free(dev);
        free(at);
    }
    if (d0 >= 0 && d1 >= 0 && d2 >= 0)
        printf("the device wrote %.1f KiB per commit during the commits, %.1f KiB per commit with the close's "
               "checkpoint (%ld KiB in all)\n",
               (double)(d1 - d0) / 2 / n, (double)(d2 - d0) / 2 / n, (d2 - d0) / 2);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "build")) return build(argv[2], atol(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "cache") &&
        (!strcmp(argv[3], "huge") || !strcmp(argv[3], "seq") || !strcmp(argv[3], "small")))
        return cache(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "folios")) return folios(argv[2]);
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "run") && (!strcmp(argv[3], "full") || !strcmp(argv[3], "nosync"))) {
        long rows = argc == 7 ? atol(argv[6]) : 1000000;
        if (rows < 1 || atol(argv[5]) < 1) return 2;
        return run(argv[2], !strcmp(argv[3], "full"), atol(argv[4]), atol(argv[5]), rows);
    }
    fprintf(stderr, "usage: commit-loop build FILE ROWS\n       commit-loop run FILE full|nosync START COUNT [ROWS]\n"
                    "       commit-loop cache FILE huge|seq|small\n       commit-loop folios FILE\n");
    return 2;
}
