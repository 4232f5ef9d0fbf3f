/*
 * commit_stages.c -- where a one-row commit's time goes, stage by stage (docs/benchmarks/README.md,
 * "The durable commit beyond its sync"): the commit loop of commit_loop.c (the commit.durable and
 * commit.nosync rows' load), with a clock read at each stage boundary of the commit.
 *
 * The clock reads are not in the library: stage_probe.py copies the core's sources and inserts
 * them there (PROBE(k), into cs_probe[k]), then this driver is built against that copy:
 *
 *   python3 Benchmarks/commit/stage_probe.py Sources/CStore /tmp/probe/CStore [--count]
 *   cc -O2 -g -std=c11 -D_GNU_SOURCE -ISources/CStore/include -o /tmp/commit-stages \
 *       Benchmarks/commit/commit_stages.c $(ls /tmp/probe/CStore/[a-z]*.c) -llz4 -lpthread -lm
 *   /tmp/commit-stages FILE full|nosync START COUNT
 *
 * on a file built by `commit-loop build FILE 1000000`. It prints each stage's mean and median in
 * µs per commit (a stage a commit does not reach counts 0). SLEEP_US=N in the environment sleeps
 * N µs before each commit, SPIN_US=N spins that long instead: what a durable commit's sleep in
 * fdatasync does to the CPU work after it, without a disk.
 */
#include "cstore.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern double cs_probe[32];
/* stage_probe.py --count: the slot's hash's and the checksums' words (see there) */
extern uint64_t cs_hash_words[3] __attribute__((weak));

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void must(int rc, const char *what)
{
    if (rc == CS_OK) return;
    fprintf(stderr, "commit-stages: %s failed: %d (%s)\n", what, rc, cs_errmsg());
    exit(1);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The probes in the order a commit reaches them (stage_probe.py): 0 cs_txn_commit entered; 1
 * file_commit_write called; 2 placed; 3 serialised; 4 journal_before_commit and the growth of the
 * file done; 5 patched; 6 record built; 7 header built and record sealed; 8 runs written in
 * place; 9 record written; 10 journal synced; 11 header written; 12 write_durable returned (and
 * online shrinking); 14 published; 13 file_commit_end returned. */
static const int order[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 13};
#define NPROBE (int)(sizeof order / sizeof order[0])
enum { NSTAGE = NPROBE + 3 };
static const char *names[NSTAGE] = {
    "begin",          "open + set",          "txn (pack, stage, plan)", "placement",      "serialise",
    "journal_before + file growth", "patch",  "record build",           "header + seal",  "in-place writes",
    "journal pwrite", "journal fdatasync",   "header write",            "wmap done, shrink", "publish",
    "commit end",     "rest of cs_txn_commit", "cs_txn_end"};

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: commit-stages FILE full|nosync START COUNT\n");
        return 2;
    }
    const char *path = argv[1];
    bool full = !strcmp(argv[2], "full");
    long start = atol(argv[3]), count = atol(argv[4]), rows = 1000000;
    const char *sl = getenv("SLEEP_US"), *sp = getenv("SPIN_US");
    long sleep_us = sl ? atol(sl) : 0, spin_us = sp ? atol(sp) : 0;
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = full ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC;
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
    int64_t first = ob.key;
    must(cs_txn_end(t), "cs_txn_end");
    double *st = calloc((size_t)count * NSTAGE, sizeof *st), *tot = calloc((size_t)count, sizeof *tot);
    if (!st || !tot) return 1;
    for (long u = start; u < start + count; u++) {
        long k = u - start;
        memset(cs_probe, 0, sizeof cs_probe);
        if (sleep_us) {
            struct timespec z = {0, sleep_us * 1000};
            nanosleep(&z, NULL);
        }
        if (spin_us)
            for (double until = now() + (double)spin_us * 1e-6; now() < until;) {
            }
        double a = now();
        must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
        double b = now();
        must(cs_obj_open(t, table, first + (int64_t)((uint64_t)(u % rows) * 7919 % (uint64_t)rows), &ob), "cs_obj_open");
        must(cs_obj_set_int(&ob, col, -(int64_t)(u + 1)), "cs_obj_set_int");
        double c = now();
        must(cs_txn_commit(t), "cs_txn_commit");
        double d = now();
        must(cs_txn_end(t), "cs_txn_end");
        double e = now();
        double pts[NPROBE + 1], prev = c;
        pts[0] = c;
        for (int i = 0; i < NPROBE; i++) {
            double v = cs_probe[order[i]];
            pts[i + 1] = v == 0 ? prev : v; /* a stage not reached takes no time */
            prev = pts[i + 1];
        }
        double *s = st + k * NSTAGE;
        s[0] = b - a;
        s[1] = c - b;
        for (int i = 0; i + 1 < NPROBE; i++) s[2 + i] = pts[i + 2] - pts[i + 1];
        s[NSTAGE - 2] = (d - pts[NPROBE]) + (pts[1] - c);
        s[NSTAGE - 1] = e - d;
        tot[k] = e - a;
    }
    must(cs_db_close(db), "cs_db_close");
    double *v = malloc((size_t)count * sizeof *v), sum = 0, msum = 0;
    if (!v) return 1;
    printf("%-32s %9s %9s\n", "stage (us per commit)", "mean", "median");
    for (int i = 0; i < NSTAGE; i++) {
        double m = 0;
        for (long k = 0; k < count; k++) m += (v[k] = st[k * NSTAGE + i] * 1e6);
        m /= (double)count;
        qsort(v, (size_t)count, sizeof *v, by_value);
        printf("%-32s %9.2f %9.2f\n", names[i], m, v[count / 2]);
        sum += m;
        msum += v[count / 2];
    }
    for (long k = 0; k < count; k++) tot[k] *= 1e6;
    qsort(tot, (size_t)count, sizeof *tot, by_value);
    printf("%-32s %9.2f %9.2f (sum of the medians %.2f)\n", "whole commit", sum, tot[count / 2], msum);
    if (cs_hash_words)
        printf("words per commit: the slot's hash beside the checksums %.1f, the checksums alone %.1f, the hash "
               "alone at the end %.1f\n",
               (double)cs_hash_words[0] / (double)count, (double)cs_hash_words[1] / (double)count,
               (double)cs_hash_words[2] / (double)count);
    free(v);
    free(st);
    free(tot);
    return 0;
}
